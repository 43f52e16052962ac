package dev.tidemark.delta;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The local store's {@code listFrom} against delta-storage's inherited one on the same
 * {@code _delta_log}: commits, checkpoints, Hadoop's {@code .crc} side files, a left-over
 * temporary file, {@code _last_checkpoint} and a {@code _staged_commits} sub-folder.
 */
public class LocalLogListingTest {

    @Rule
    public TemporaryFolder folder = new TemporaryFolder();

    private Configuration conf;
    private java.nio.file.Path log;

    @Before
    public void setUp() throws IOException {
        conf = new Configuration(false);
        log = folder.getRoot().toPath().resolve("events").resolve("_delta_log");
        Files.createDirectories(log.resolve("_staged_commits"));
        for (int version = 0; version <= 12; version++) {
            write(String.format("%020d.json", version), "commit " + version);
            write(String.format(".%020d.json.crc", version), "crc");
        }
        write("00000000000000000010.checkpoint.parquet", "checkpoint");
        write(".00000000000000000010.checkpoint.parquet.crc", "crc");
        write("_last_checkpoint", "{\"version\":10}");
        write("._last_checkpoint.crc", "crc");
        write(".00000000000000000013.json.0b5e.tmp", "a writer's temporary file");
        write("_staged_commits/00000000000000000013.uuid.json", "staged");
    }

    @Test
    public void fromTheListingPrefixOfAVersionTheCheckpointItsCommitAndWhatFollowsAreListed() throws IOException {
        // Delta lists from "<version>." (FileNames.listingPrefix); expected names written out by hand.
        assertEquals(
                List.of("00000000000000000010.checkpoint.parquet", "00000000000000000010.json",
                        "00000000000000000011.json", "00000000000000000012.json", "_last_checkpoint", "_staged_commits"),
                names(local().listFrom(start("00000000000000000010."), conf)));
    }

    @Test
    public void theListingIsTheInheritedOneWhateverTheStart() throws IOException {
        for (String name : List.of("!", "00000000000000000000.json", "00000000000000000010.", "00000000000000000010.json",
                "00000000000000000012.json", "00000000000000000012.json~", "_last_checkpoint", "~")) {
            assertSame(name, inherited().listFrom(start(name), conf), local().listFrom(start(name), conf));
        }
    }

    @Test
    public void onTheRawLocalFileSystemTheChecksumFilesItShowsAreListedToo() throws IOException {
        conf.set("fs.file.impl", RawLocalFileSystem.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);

        List<String> listed = names(local().listFrom(start("!"), conf));

        assertEquals(".00000000000000000000.json.crc", listed.get(0));
        assertSame("!", inherited().listFrom(start("!"), conf), local().listFrom(start("!"), conf));
    }

    @Test
    public void aMissingFolderIsFileNotFoundAsInherited() {
        Path nowhere = new Path("file:" + folder.getRoot().toPath().resolve("nowhere/_delta_log/00000000000000000000.json"));

        assertThrows(FileNotFoundException.class, () -> inherited().listFrom(nowhere, conf));
        assertThrows(FileNotFoundException.class, () -> local().listFrom(nowhere, conf));
    }

    private LocalPutIfAbsentLogStore local() {
        return new LocalPutIfAbsentLogStore(conf);
    }

    /** delta-storage's listFrom as the stores inherit it; nothing else of this store is called. */
    private HadoopFileSystemLogStore inherited() {
        return new HadoopFileSystemLogStore(conf) {
            @Override
            public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf) {
                throw new UnsupportedOperationException();
            }

            @Override
            public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
                throw new UnsupportedOperationException();
            }
        };
    }

    private Path start(String name) {
        return new Path("file:" + log.resolve(name));
    }

    private void write(String name, String content) throws IOException {
        Files.write(log.resolve(name), content.getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> names(Iterator<FileStatus> listed) {
        List<String> names = new ArrayList<>();
        listed.forEachRemaining(entry -> names.add(entry.getPath().getName()));
        return names;
    }

    /** Same entries in the same order, each with the fields Delta reads. */
    static void assertSame(String start, Iterator<FileStatus> expected, Iterator<FileStatus> actual) {
        assertEquals("from " + start, describe(expected), describe(actual));
    }

    private static List<String> describe(Iterator<FileStatus> listed) {
        List<String> described = new ArrayList<>();
        listed.forEachRemaining(entry -> described.add(entry.getPath() + " length=" + entry.getLen()
                + " modified=" + entry.getModificationTime() + " directory=" + entry.isDirectory()
                + " blockSize=" + entry.getBlockSize()));
        return described;
    }
}
