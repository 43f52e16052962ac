#!/bin/sh
# One-shot set-up of the full stack's object store, run by the minio-init service.
# Idempotent: `docker compose up` runs it on every start.
#
# tidemark gets its own S3 user limited to the lake bucket, so the MinIO root credentials stay
# with the storage admin and never reach Airflow or Spark containers.
set -eu

: "${MINIO_ENDPOINT:?}" "${MINIO_ROOT_USER:?}" "${MINIO_ROOT_PASSWORD:?}"
: "${TIDEMARK_S3_BUCKET:?}" "${TIDEMARK_S3_ACCESS_KEY:?}" "${TIDEMARK_S3_SECRET_KEY:?}"

alias_name=tidemark
policy_name="${TIDEMARK_S3_BUCKET}-readwrite"
policy_file="$(mktemp)"
trap 'rm -f "$policy_file"' EXIT

mc alias set "$alias_name" "$MINIO_ENDPOINT" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null
mc mb --ignore-existing "$alias_name/$TIDEMARK_S3_BUCKET"

cat >"$policy_file" <<EOF
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:*"],
      "Resource": [
        "arn:aws:s3:::${TIDEMARK_S3_BUCKET}",
        "arn:aws:s3:::${TIDEMARK_S3_BUCKET}/*"
      ]
    }
  ]
}
EOF
mc admin policy create "$alias_name" "$policy_name" "$policy_file" >/dev/null

# `user add` also resets the secret of an existing user, so a rotated
# TIDEMARK_S3_SECRET_KEY takes effect on the next start.
mc admin user add "$alias_name" "$TIDEMARK_S3_ACCESS_KEY" "$TIDEMARK_S3_SECRET_KEY" >/dev/null
# `policy attach` fails when the policy is already attached, so look first.
if ! mc admin user info "$alias_name" "$TIDEMARK_S3_ACCESS_KEY" | grep -q "$policy_name"; then
    mc admin policy attach "$alias_name" "$policy_name" --user "$TIDEMARK_S3_ACCESS_KEY" >/dev/null
fi

echo "bucket $TIDEMARK_S3_BUCKET ready for S3 user $TIDEMARK_S3_ACCESS_KEY"
