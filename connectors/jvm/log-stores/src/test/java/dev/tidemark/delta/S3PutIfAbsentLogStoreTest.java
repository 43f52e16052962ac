package dev.tidemark.delta;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.AWSBadRequestException;
import org.junit.Before;
import org.junit.Test;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;

/** The log store against {@link PutIfAbsentFileSystem}, S3's conditional-create rules in memory. */
public class S3PutIfAbsentLogStoreTest {

    private static final Path COMMIT = new Path("putifabsent://bucket/lake/events/_delta_log/00000000000000000007.json");

    private Configuration conf;
    private S3PutIfAbsentLogStore store;

    @Before
    public void setUp() {
        PutIfAbsentFileSystem.reset();
        conf = new Configuration(false);
        conf.set("fs.putifabsent.impl", PutIfAbsentFileSystem.class.getName());
        conf.setBoolean("fs.putifabsent.impl.disable.cache", true);
        store = new S3PutIfAbsentLogStore(conf);
    }

    @Test
    public void aCommitIsWrittenWithTheMandatoryConditionalOption() throws IOException {
        store.write(COMMIT, lines("{\"commitInfo\":{}}", "{\"add\":{}}"), false, conf);

        assertEquals(1, PutIfAbsentFileSystem.conditionalCreates);
        assertArrayEquals("{\"commitInfo\":{}}\n{\"add\":{}}\n".getBytes(StandardCharsets.UTF_8), stored(COMMIT));
    }

    @Test
    public void theSecondCommitOfAVersionIsRefusedAsFileAlreadyExistsAndTheFirstStays() throws IOException {
        store.write(COMMIT, lines("first"), false, conf);

        FileAlreadyExistsException refused =
                assertThrows(FileAlreadyExistsException.class, () -> store.write(COMMIT, lines("second"), false, conf));

        assertEquals(COMMIT.toString(), refused.getFile());
        assertArrayEquals("first\n".getBytes(StandardCharsets.UTF_8), stored(COMMIT));
    }

    @Test
    public void aConflictWithAWriteInFlightIsAskedAgain() throws IOException {
        PutIfAbsentFileSystem.failNextClose(conflict409());

        store.write(COMMIT, lines("after a 409"), false, conf);

        assertEquals(2, PutIfAbsentFileSystem.conditionalCreates);
        assertArrayEquals("after a 409\n".getBytes(StandardCharsets.UTF_8), stored(COMMIT));
    }

    @Test
    public void conflictsThatDoNotSettleFailTheWriteWithS3sError() {
        for (int i = 0; i < S3PutIfAbsentLogStore.CONFLICT_ATTEMPTS; i++) {
            PutIfAbsentFileSystem.failNextClose(conflict409());
        }

        AWSBadRequestException error =
                assertThrows(AWSBadRequestException.class, () -> store.write(COMMIT, lines("x"), false, conf));

        assertEquals(409, error.statusCode());
        assertEquals(S3PutIfAbsentLogStore.CONFLICT_ATTEMPTS, PutIfAbsentFileSystem.conditionalCreates);
        assertFalse(PutIfAbsentFileSystem.OBJECTS.containsKey(COMMIT.toUri().getPath()));
    }

    @Test
    public void anOverwriteReplacesWithoutCondition() throws IOException {
        Path lastCheckpoint = new Path("putifabsent://bucket/lake/events/_delta_log/_last_checkpoint");
        store.write(lastCheckpoint, lines("{\"version\":10}"), true, conf);
        store.write(lastCheckpoint, lines("{\"version\":20}"), true, conf);

        assertEquals(0, PutIfAbsentFileSystem.conditionalCreates);
        assertArrayEquals("{\"version\":20}\n".getBytes(StandardCharsets.UTF_8), stored(lastCheckpoint));
    }

    @Test
    public void aFailureWhileProducingTheActionsWritesNothing() {
        Iterator<String> failing = new Iterator<String>() {
            private boolean first = true;

            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public String next() {
                if (first) {
                    first = false;
                    return "{\"commitInfo\":{}}";
                }
                throw new IllegalStateException("action serialisation failed");
            }
        };

        assertThrows(IllegalStateException.class, () -> store.write(COMMIT, failing, false, conf));

        assertTrue(PutIfAbsentFileSystem.OBJECTS.isEmpty());
    }

    @Test
    public void conditionalCreatesSwitchedOffInS3aAreRefusedNotIgnored() {
        conf.setBoolean(S3PutIfAbsentLogStore.S3A_CONDITIONAL_CREATE, false);

        IOException error = assertThrows(IOException.class, () -> store.write(COMMIT, lines("x"), false, conf));

        assertTrue(error.getMessage(), error.getMessage().contains("fs.s3a.create.conditional.enabled"));
        assertTrue(PutIfAbsentFileSystem.OBJECTS.isEmpty());
    }

    @Test
    public void partialWritesAreNeverVisible() {
        assertFalse(store.isPartialWriteVisible(COMMIT, conf));
    }

    @Test
    public void onAFileSystemOtherThanS3aTheInheritedListingAnswers() throws IOException {
        String log = "putifabsent://bucket/lake/events/_delta_log/";
        for (String name : List.of("00000000000000000009.json", "00000000000000000010.checkpoint.parquet",
                "00000000000000000010.json", "00000000000000000011.json", "_last_checkpoint",
                "_staged_commits/00000000000000000012.uuid.json")) {
            store.write(new Path(log + name), lines("x"), false, conf);
        }

        List<String> listed = new java.util.ArrayList<>();
        store.listFrom(new Path(log + "00000000000000000010."), conf)
                .forEachRemaining(entry -> listed.add(entry.getPath().getName() + (entry.isDirectory() ? "/" : "")));

        assertEquals(List.of("00000000000000000010.checkpoint.parquet", "00000000000000000010.json",
                "00000000000000000011.json", "_last_checkpoint", "_staged_commits/"), listed);
        assertThrows(java.io.FileNotFoundException.class,
                () -> store.listFrom(new Path("putifabsent://bucket/lake/nowhere/_delta_log/0.json"), conf));
    }

    private static Iterator<String> lines(String... lines) {
        List<String> list = Arrays.asList(lines);
        return list.iterator();
    }

    private static byte[] stored(Path path) {
        return PutIfAbsentFileSystem.OBJECTS.get(path.toUri().getPath());
    }

    private static AWSBadRequestException conflict409() {
        AwsServiceException conflict = AwsServiceException.builder()
                .statusCode(409)
                .awsErrorDetails(AwsErrorDetails.builder().errorCode("ConditionalRequestConflict").build())
                .message("A conflicting conditional operation is currently in progress")
                .build();
        return new AWSBadRequestException("PUT", conflict);
    }
}
