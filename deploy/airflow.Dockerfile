# syntax=docker/dockerfile:1
# tidemark's Airflow image: every Airflow component of the full stack, and the Spark driver of
# each job (LocalExecutor runs tasks, and so spark-submit, in the scheduler container).
# Build context: the repository root (see docker-compose.yml).

ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11

# Jars are resolved in a throw-away stage so Maven never ships in the runtime image.
FROM maven:3.9-eclipse-temurin-17 AS jars
WORKDIR /src
COPY deploy/s3a/pom.xml deploy/s3a/pom.xml
COPY connectors/jvm connectors/jvm
# Same layout as the embedded stack's $TIDEMARK_JARS: one folder per group.
RUN for group in delta kafka spark-kafka; do \
        mvn -q -B -f connectors/jvm/pom.xml -P "$group" dependency:copy-dependencies -Dtidemark.jars=/out/jars \
        || exit 1; \
    done \
 && mvn -q -B -f connectors/jvm/log-stores/pom.xml package -Dtidemark.build=/tmp/log-stores \
 && cp /tmp/log-stores/tidemark-log-stores.jar /out/jars/delta/ \
 && mvn -q -B -f deploy/s3a/pom.xml dependency:copy-dependencies -DoutputDirectory=/out/s3a

FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION

USER root
# spark-submit starts a JVM; 17 is the Java both Spark 4.2 and Delta 4.4 support.
# The JRE's postinst links its man pages; slim images drop /usr/share/man, so recreate it.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
 && apt-get autoremove -yqq --purge \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/opt/java

COPY --chown=airflow:0 . /opt/tidemark
RUN mkdir -p /opt/tidemark/state && chown airflow:0 /opt/tidemark/state
COPY --from=jars --chown=airflow:0 /out/jars /opt/tidemark/jars

USER airflow
# Airflow is named with its exact version so resolving tidemark's dependencies can never
# up- or downgrade the Airflow the image was built for.
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" /opt/tidemark
# s3a goes into pyspark's own jars folder: Hadoop looks filesystems up at JVM start, before
# spark.jars are on the classpath.
RUN --mount=type=bind,from=jars,source=/out/s3a,target=/tmp/s3a \
    cp /tmp/s3a/*.jar "$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars/"

ENV SPARK_CONF_DIR=/opt/tidemark/deploy/spark-conf
WORKDIR /opt/airflow
