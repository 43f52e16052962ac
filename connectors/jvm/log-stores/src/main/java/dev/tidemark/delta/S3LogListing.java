package dev.tidemark.delta;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileStatus;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.fs.s3a.S3AUtils;
import org.apache.hadoop.fs.s3a.Tristate;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.RequestPayer;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@code listFrom} on S3A at the cost of the entries it returns: one LIST request per 1,000 of
 * them (S3's page), where S3A's {@code listStatus(folder)} pages through the whole
 * {@code _delta_log} and delta-storage's {@code listFrom} then drops what precedes the start.
 *
 * <p>The LIST asks S3 itself to start at the start name ({@code start-after}) and, with the
 * delimiter {@code /}, shows a sub-folder ({@code _delta_log/_staged_commits/}) as one directory
 * entry, not its objects. The rest is what S3A's {@code listStatus} does with a page, so the
 * result is the inherited one ({@link LogListing}): the folder's own marker object and S3N's
 * {@code _$folder$} markers are left out, each file is S3A's {@link S3AFileStatus} (qualified
 * path, size, last-modified in milliseconds, S3A's block size), each sub-folder a directory
 * status. A listing that finds nothing from the start asks once more, one key long, whether the
 * folder holds anything at all; if not, the inherited method answers (a missing folder is
 * {@link java.io.FileNotFoundException}), at the cost of an empty folder.
 *
 * <p>The LIST goes through S3A's own client ({@code getS3AInternals().getAmazonS3Client}),
 * outside S3A's retries and its per-operation statistics (the SDK's request count, S3A's
 * {@code store_io_request}, still sees it). Client-side encryption (object sizes are not
 * file sizes) and S3A's ListObjects v1 setting ({@code fs.s3a.list.version=1}, for stores without
 * v2) are left to the inherited method: {@link #lists} says no.
 */
final class S3LogListing {

    /** S3A's LIST page size setting and its default (S3 caps a page at 1,000 keys). */
    static final String PAGE_SIZE = "fs.s3a.paging.maximum";
    static final int DEFAULT_PAGE_SIZE = 5000;

    private S3LogListing() {
    }

    /** Whether {@link #listFrom} knows {@code fs}: S3A with ListObjects v2 and no client-side encryption. */
    static boolean lists(FileSystem fs) {
        if (!(fs instanceof S3AFileSystem)) {
            return false;  // a test's stand-in, another S3 connector: the inherited listing
        }
        Configuration conf = fs.getConf();  // S3A's, with the bucket's own settings applied
        return conf.getInt("fs.s3a.list.version", 2) == 2
                && !conf.getTrimmed("fs.s3a.encryption.algorithm", "").toUpperCase().startsWith("CSE");
    }

    /**
     * The entries from {@code start} on, or null when the folder holds nothing at all (no object,
     * no marker): the caller's inherited listing then says what such a folder is.
     */
    static Iterator<FileStatus> listFrom(S3AFileSystem fs, Path start) throws IOException {
        Path folder = fs.makeQualified(start.getParent());
        String folderKey = fs.maybeAddTrailingSlash(fs.pathToKey(folder));
        String startKey = folderKey + start.getName();
        Configuration conf = fs.getConf();
        boolean requesterPays = conf.getBoolean("fs.s3a.requester.pays.enabled", false);
        ListObjectsV2Request.Builder request = ListObjectsV2Request.builder()
                .bucket(fs.getBucket())
                .prefix(folderKey)
                .delimiter("/")
                // start-after is exclusive: after the start key less its last character, every key
                // >= the start key comes; the few between the two fail the name test below.
                .startAfter(startKey.substring(0, startKey.length() - 1))
                .maxKeys(Math.min(conf.getInt(PAGE_SIZE, DEFAULT_PAGE_SIZE), 1000));
        if (requesterPays) {
            request.requestPayer(RequestPayer.REQUESTER);
        }
        S3Client s3 = fs.getS3AInternals().getAmazonS3Client("Delta log listFrom " + start);
        long blockSize = fs.getDefaultBlockSize(folder);
        String owner = fs.getUsername();
        List<FileStatus> listed = new ArrayList<>();
        ListObjectsV2Response page;
        do {
            page = list(s3, request.build(), folder);
            for (S3Object object : page.contents()) {
                String key = object.key();
                if (key.equals(folderKey) || key.endsWith("_$folder$")) {
                    continue;  // the folder's own marker; an S3N folder marker: S3A lists neither
                }
                Path path = fs.keyToQualifiedPath(key);
                if (LogListing.from(start, path.getName())) {
                    listed.add(S3AUtils.createFileStatus(path, object, blockSize, owner, object.eTag(), null, object.size()));
                }
            }
            for (CommonPrefix prefix : page.commonPrefixes()) {
                Path path = fs.keyToQualifiedPath(prefix.prefix());
                if (LogListing.from(start, path.getName())) {
                    listed.add(new S3AFileStatus(Tristate.FALSE, path, owner));
                }
            }
            request.continuationToken(page.nextContinuationToken());
        } while (Boolean.TRUE.equals(page.isTruncated()));
        if (listed.isEmpty() && isEmpty(s3, fs, folderKey, requesterPays, folder)) {
            return null;
        }
        return LogListing.sortedByName(listed);
    }

    /** Whether nothing at all has a key under {@code folderKey} (not even the folder's marker). */
    private static boolean isEmpty(S3Client s3, S3AFileSystem fs, String folderKey, boolean requesterPays, Path folder)
            throws IOException {
        ListObjectsV2Request.Builder probe = ListObjectsV2Request.builder().bucket(fs.getBucket()).prefix(folderKey).maxKeys(1);
        if (requesterPays) {
            probe.requestPayer(RequestPayer.REQUESTER);
        }
        return list(s3, probe.build(), folder).contents().isEmpty();
    }

    private static ListObjectsV2Response list(S3Client s3, ListObjectsV2Request request, Path folder) throws IOException {
        try {
            return s3.listObjectsV2(request);
        } catch (SdkException error) {
            throw S3AUtils.translateException("listFrom", folder, error);
        }
    }
}
