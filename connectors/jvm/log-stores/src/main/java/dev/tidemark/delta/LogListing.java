package dev.tidemark.delta;

import java.util.Comparator;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * What a Delta {@code LogStore.listFrom(start)} returns, as delta-storage's
 * {@code HadoopFileSystemLogStore} defines it: the entries of {@code start}'s folder whose file
 * name compares {@code >=} {@code start}'s name ({@link String#compareTo}, UTF-16 order), sorted
 * by name. Entries are whatever the file system's {@code listStatus(folder)} shows: files, and
 * sub-folders as directory entries (never their contents); nothing else is filtered out.
 *
 * <p>The stores' own listings (local, S3) decide which names to look at; this is the one place
 * that says which of them are returned and in what order.
 */
final class LogListing {

    private LogListing() {
    }

    /** Whether the entry named {@code name} belongs to a listing from {@code start}. */
    static boolean from(Path start, String name) {
        return name.compareTo(start.getName()) >= 0;
    }

    /** {@code entries} in the order {@code listFrom} promises: by name. */
    static Iterator<FileStatus> sortedByName(List<FileStatus> entries) {
        entries.sort(Comparator.comparing(entry -> entry.getPath().getName()));
        return entries.iterator();
    }
}
