package dev.tidemark.delta;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** The local log store on this machine's file system: put-if-absent by link(2), whole files. */
public class LocalPutIfAbsentLogStoreTest {

    @Rule
    public TemporaryFolder folder = new TemporaryFolder();

    private Configuration conf;
    private LocalPutIfAbsentLogStore store;
    private java.nio.file.Path log;

    @Before
    public void setUp() throws IOException {
        conf = new Configuration(false);
        store = new LocalPutIfAbsentLogStore(conf);
        log = folder.getRoot().toPath().resolve("events").resolve("_delta_log");
    }

    private Path commit(long version) {
        return new Path("file:" + log.resolve(String.format("%020d.json", version)));
    }

    @Test
    public void aCommitIsWrittenWholeWithNothingElseBesideIt() throws IOException {
        store.write(commit(0), lines("{\"commitInfo\":{}}", "{\"add\":{}}"), false, conf);

        assertArrayEquals(bytes("{\"commitInfo\":{}}\n{\"add\":{}}\n"), Files.readAllBytes(file(commit(0))));
        assertEquals(List.of("00000000000000000000.json"), names());  // no temporary, no checksum file
    }

    @Test
    public void theSecondCommitOfAVersionIsRefusedAsFileAlreadyExistsAndTheFirstStays() throws IOException {
        store.write(commit(7), lines("first"), false, conf);

        FileAlreadyExistsException refused =
                assertThrows(FileAlreadyExistsException.class, () -> store.write(commit(7), lines("second"), false, conf));

        assertEquals(commit(7).toString(), refused.getFile());
        assertArrayEquals(bytes("first\n"), Files.readAllBytes(file(commit(7))));
        assertEquals(List.of("00000000000000000007.json"), names());
    }

    @Test
    public void ofDriversCommittingOneVersionAtTheSameMomentExactlyOneWinsRoundAfterRound() throws Exception {
        int writers = 8;
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            for (long version = 0; version < 50; version++) {
                CyclicBarrier together = new CyclicBarrier(writers);
                Path path = commit(version);
                List<Future<Boolean>> outcomes = new ArrayList<>();
                for (int writer = 0; writer < writers; writer++) {
                    String content = "writer " + writer;
                    Callable<Boolean> attempt = () -> {
                        together.await();
                        try {
                            store.write(path, lines(content), false, conf);
                            return true;
                        } catch (FileAlreadyExistsException taken) {
                            return false;
                        }
                    };
                    outcomes.add(pool.submit(attempt));
                }
                List<Integer> winners = new ArrayList<>();
                for (int writer = 0; writer < writers; writer++) {
                    if (outcomes.get(writer).get()) {
                        winners.add(writer);
                    }
                }
                assertEquals("version " + version, 1, winners.size());
                assertArrayEquals(bytes("writer " + winners.get(0) + "\n"), Files.readAllBytes(file(path)));
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(50, names().size());  // the commits, and nothing else
    }

    @Test
    public void anOverwriteReplacesTheFileAndAStaleChecksumBesideItGoes() throws IOException {
        Path pointer = new Path("file:" + log.resolve("_last_checkpoint"));
        store.write(pointer, lines("{\"version\":10}"), true, conf);
        Files.write(LocalPutIfAbsentLogStore.checksumOf(file(pointer)), bytes("stale crc of an earlier writer"));

        store.write(pointer, lines("{\"version\":20}"), true, conf);

        assertArrayEquals(bytes("{\"version\":20}\n"), Files.readAllBytes(file(pointer)));
        assertFalse(Files.exists(LocalPutIfAbsentLogStore.checksumOf(file(pointer))));
    }

    @Test
    public void aFailureWhileProducingTheActionsLeavesNoFile() throws IOException {
        Iterator<String> failing = new Iterator<>() {
            private boolean first = true;

            public boolean hasNext() {
                return true;
            }

            public String next() {
                if (first) {
                    first = false;
                    return "{\"commitInfo\":{}}";
                }
                throw new IllegalStateException("the producer failed");
            }
        };

        assertThrows(IllegalStateException.class, () -> store.write(commit(3), failing, false, conf));
        assertFalse(Files.exists(log) && names().size() > 0);
    }

    @Test
    public void aPathOnAnotherFileSystemIsRefusedNamingTheSetting() {
        IOException refused = assertThrows(
                IOException.class, () -> store.write(new Path("s3a://bucket/t/_delta_log/0.json"), lines("x"), false, conf));
        assertTrue(refused.getMessage().contains("spark.delta.logStore.s3a.impl"));
    }

    private java.nio.file.Path file(Path path) {
        return java.nio.file.Paths.get(path.toUri().getPath());
    }

    private List<String> names() throws IOException {
        try (var listing = Files.list(log)) {
            return listing.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static Iterator<String> lines(String... lines) {
        return Arrays.asList(lines).iterator();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
