package dev.tidemark.delta;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * {@code listFrom} on Hadoop's local file system at the cost of the entries it returns.
 *
 * <p>Hadoop's {@code listStatus(folder)} stats every entry of the folder, and delta-storage's
 * {@code listFrom} then drops those before the start name: on a {@code _delta_log} that keeps 30
 * days of commits that is thousands of stats for the few files a snapshot update reads. Here the
 * folder's names are read without a stat ({@code readdir}), filtered by name, and only the
 * entries returned are stat'ed, each with the file system's own {@code getFileStatus}, so each
 * {@link FileStatus} is the one {@code listStatus} would have made.
 *
 * <p>Same result as the inherited listing ({@link LogListing}): Hadoop's checksum file system
 * ({@link LocalFileSystem}, {@code file:}'s default) hides its side files {@code .NAME.crc}, so
 * they are hidden here too, and shown on the raw file system, which shows them; an entry removed
 * between the read of the names and its stat is left out, as {@code listStatus} leaves it out;
 * a missing folder is {@link FileNotFoundException}.
 */
final class LocalLogListing {

    private LocalLogListing() {
    }

    /** Whether {@link #listFrom} knows {@code fs}: Hadoop's local file system, checksummed or raw. */
    static boolean lists(FileSystem fs) {
        return fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem;
    }

    static Iterator<FileStatus> listFrom(FileSystem fs, Path start) throws IOException {
        Path folder = start.getParent();
        boolean hidesChecksums = fs instanceof ChecksumFileSystem;
        List<String> names = new ArrayList<>();
        try (DirectoryStream<java.nio.file.Path> entries = Files.newDirectoryStream(localFile(fs, folder).toPath())) {
            for (java.nio.file.Path entry : entries) {
                String name = entry.getFileName().toString();
                if (LogListing.from(start, name) && !(hidesChecksums && ChecksumFileSystem.isChecksumFile(new Path(name)))) {
                    names.add(name);
                }
            }
        } catch (NoSuchFileException missing) {
            FileNotFoundException notFound = new FileNotFoundException("File " + folder + " does not exist");
            notFound.initCause(missing);
            throw notFound;
        } catch (NotDirectoryException file) {
            // listStatus of a file is that file alone; rare enough to ask it.
            return LogListing.sortedByName(new ArrayList<>(Arrays.stream(fs.listStatus(folder))
                    .filter(entry -> LogListing.from(start, entry.getPath().getName())).toList()));
        }
        List<FileStatus> listed = new ArrayList<>(names.size());
        for (String name : names) {
            try {
                // A Path built from parts: a name holding ':' is not read as a scheme.
                listed.add(fs.getFileStatus(new Path(folder, new Path(null, null, name))));
            } catch (FileNotFoundException removed) {
                // Gone since the names were read (a cleaned-up temporary file): not listed.
            }
        }
        return LogListing.sortedByName(listed);
    }

    private static File localFile(FileSystem fs, Path folder) {
        return fs instanceof LocalFileSystem local ? local.pathToFile(folder) : ((RawLocalFileSystem) fs).pathToFile(folder);
    }
}
