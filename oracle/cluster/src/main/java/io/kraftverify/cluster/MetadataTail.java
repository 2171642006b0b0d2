package io.kraftverify.cluster;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import java.lang.reflect.Method;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * kraft-verify's metadata tail: prints the records a running KRaft controller writes to its
 * metadata log (the segments of {@code __cluster_metadata-0}) as JSON lines, one line per
 * record batch, decoded with Kafka's own record serde ({@link MetadataRecordSerde}) and JSON
 * converters. A batch is one controller event's atomic write, so the harness compares the
 * model's state with the controller's after each batch.
 *
 * <p>Usage: {@code MetadataTail DIR [POLL_MS]}. It polls the segment files, prints every batch
 * not printed yet (a batch still being written is left for the next poll), and exits when its
 * standard input closes, so it never outlives the harness. Only the record batch header
 * (format v2) is parsed here; control batches (Raft's own) are skipped.
 *
 * <p>{@code MetadataTail --once PATH...} (what {@code kraft-verify validate-log} reads a kept log
 * with): each PATH a metadata log directory (its snapshots, {@code *.checkpoint}, then its
 * segments) or a segment or snapshot file, every batch printed once, then it exits. A batch that
 * cannot be read is one line on standard error, naming the file and the offset, and exit 2.
 */
public final class MetadataTail {
    private static final int HEADER = 61;          // v2 batch header up to the records
    private static final int CRC = 17;
    private static final int ATTRIBUTES = 21;
    /** --once checks every batch's CRC (a log copied while a batch was rewritten, or damaged); the tail, a
     * file the controller is still writing, does not. */
    private static boolean checkCrc = false;
    private static final int LAST_OFFSET_DELTA = 23;
    private static final int RECORDS_COUNT = 57;

    private MetadataTail() {
    }

    /** Kafka's JSON converter, called by reflection: its return type (Jackson's) is Kafka's, not ours. */
    private static final Method WRITE_JSON;

    static {
        try {
            WRITE_JSON = MetadataJsonConverters.class.getMethod("writeJson", ApiMessage.class, short.class);
        } catch (NoSuchMethodException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** An unsigned varint (the record format's zig-zag varints are decoded by the callers). */
    private static long readUnsignedVarlong(ByteBuffer buf) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = buf.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalStateException("a varint too long: a damaged record");
    }

    private static long readVarlong(ByteBuffer buf) {
        long raw = readUnsignedVarlong(buf);
        return (raw >>> 1) ^ -(raw & 1);
    }

    private static int readVarint(ByteBuffer buf) {
        return (int) readVarlong(buf);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--once")) {
            System.exit(once(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        // A missing directory is an empty log: the controller creates it when it formats.
        Path dir = Paths.get(args[0]);
        long pollMs = args.length > 1 ? Long.parseLong(args[1]) : 50;
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // the harness writes nothing; end of input means it is gone
                }
            } catch (IOException e) {
                // treated as end of input
            }
            System.exit(0);
        }, "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        long next = 0;
        while (true) {
            for (Path segment : segments(dir)) {
                next = print(ByteBuffer.wrap(Files.readAllBytes(segment)), next, out);
            }
            out.flush();
            Thread.sleep(pollMs);
        }
    }

    /** Every batch of the given logs and files, once; 0, or 2 with one line on a file it cannot read. */
    private static int once(String[] paths) throws IOException {
        checkCrc = true;
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        for (String arg : paths) {
            Path path = Paths.get(arg);
            List<Path> files = new ArrayList<>();
            if (Files.isDirectory(path)) {
                try (Stream<Path> all = Files.list(path)) {
                    all.filter(p -> p.getFileName().toString().endsWith(".checkpoint")).sorted().forEach(files::add);
                }
                files.addAll(segments(path));
            } else {
                files.add(path);
            }
            for (Path file : files) {
                ByteBuffer buf;
                try {
                    buf = ByteBuffer.wrap(Files.readAllBytes(file));
                } catch (IOException e) {
                    System.err.println(file + ": cannot be read (" + e.getMessage() + ")");
                    return 2;
                }
                try {
                    out.println("{\"file\":\"" + file.toString().replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
                    long read = print(buf, 0, out);
                    int whole = wholeBytes(buf);
                    if (whole < buf.limit()) {
                        System.err.println(file + ": offset " + read + ": a batch cut short (" + (buf.limit() - whole)
                            + " bytes after the last whole batch)");
                        out.flush();
                        return 2;
                    }
                } catch (IllegalStateException e) {        // ours: a CRC, a varint, a compressed batch
                    out.flush();
                    System.err.println(file + ": " + String.valueOf(e.getMessage()).split("\n")[0]);
                    return 2;
                } catch (Unreadable e) {
                    out.flush();
                    Throwable why = e.getCause();
                    while (why.getCause() != null) {          // Kafka's own words, not its wrappers'
                        why = why.getCause();
                    }
                    System.err.println(file + ": offset " + e.offset + ": a record this release's classes cannot read ("
                        + String.valueOf(why.getMessage()).split("\n")[0]
                        + "): a log of another release, a record type it does not know, or damaged");
                    return 2;
                } catch (RuntimeException | ReflectiveOperationException e) {
                    out.flush();
                    System.err.println(file + ": a record this release's classes cannot read ("
                        + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).split("\n")[0]
                        + "): a log of another release, or damaged");
                    return 2;
                }
            }
        }
        out.flush();
        return 0;
    }

    /** A record Kafka's serde refused, at its offset. */
    private static final class Unreadable extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final long offset;

        Unreadable(long offset, RuntimeException cause) {
            super(cause);
            this.offset = offset;
        }
    }

    /** The bytes of a buffer's whole batches, from its start. */
    private static int wholeBytes(ByteBuffer buf) {
        int pos = 0;
        while (buf.limit() - pos >= 12) {
            int length = buf.getInt(pos + 8);
            int end = pos + 12 + length;
            if (length < HEADER - 12 || end > buf.limit()) {
                break;
            }
            pos = end;
        }
        return pos;
    }

    private static List<Path> segments(Path dir) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (Stream<Path> files = Files.list(dir)) {
            files.filter(p -> p.getFileName().toString().endsWith(".log")).sorted().forEach(out::add);
        }
        return out;
    }

    /** Prints the complete batches of one segment from offset {@code next} on; returns the new next. */
    private static long print(ByteBuffer buf, long next, PrintStream out) throws ReflectiveOperationException {
        int pos = 0;
        while (buf.limit() - pos >= 12) {
            long base = buf.getLong(pos);
            int length = buf.getInt(pos + 8);
            int end = pos + 12 + length;
            if (length < HEADER - 12 || end > buf.limit()) {
                break;                        // a batch still being written
            }
            short attributes = buf.getShort(pos + ATTRIBUTES);
            long last = base + buf.getInt(pos + LAST_OFFSET_DELTA);
            boolean control = (attributes & 0x20) != 0;
            if (checkCrc) {                   // the batch's CRC-32C, from its attributes to its end
                java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                ByteBuffer covered = buf.duplicate();
                covered.position(pos + ATTRIBUTES).limit(end);
                crc.update(covered);
                if ((int) crc.getValue() != buf.getInt(pos + CRC)) {
                    throw new IllegalStateException("offset " + base + ": the batch's CRC does not match its bytes");
                }
            }
            if (!control && last >= next) {
                if ((attributes & 0x7) != 0) {
                    throw new IllegalStateException("compressed metadata batch at offset " + base);
                }
                StringBuilder line = new StringBuilder("{\"batch\":").append(base).append(",\"records\":[");
                ByteBuffer records = buf.duplicate();
                records.position(pos + HEADER).limit(end);
                int count = buf.getInt(pos + RECORDS_COUNT);
                boolean first = true;
                for (int i = 0; i < count; i++) {
                    int size = readVarint(records);
                    int start = records.position();
                    records.get();                                  // attributes
                    readVarlong(records);                 // timestamp delta
                    long offset = base + readVarint(records);
                    int keySize = readVarint(records);
                    if (keySize > 0) {
                        records.position(records.position() + keySize);
                    }
                    int valueSize = readVarint(records);
                    ByteBuffer value = records.slice();
                    value.limit(valueSize);
                    records.position(start + size);
                    if (offset < next) {
                        continue;
                    }
                    ApiMessageAndVersion message;
                    try {
                        message = MetadataRecordSerde.INSTANCE.read(new ByteBufferAccessor(value), valueSize);
                    } catch (RuntimeException e) {
                        throw new Unreadable(offset, e);
                    }
                    if (!first) {
                        line.append(',');
                    }
                    first = false;
                    line.append("{\"offset\":").append(offset)
                        .append(",\"type\":\"").append(message.message().getClass().getSimpleName())
                        .append("\",\"version\":").append(message.version())
                        .append(",\"data\":").append(WRITE_JSON.invoke(null, message.message(), message.version()))
                        .append('}');
                }
                out.println(line.append("]}"));
            }
            next = Math.max(next, last + 1);
            pos = end;
        }
        return next;
    }
}
