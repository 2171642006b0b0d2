package io.kraftverify.cluster;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * kraft-verify's metadata log writer, for tests: writes the batches {@link MetadataTail} prints
 * ({@code {"batch":..,"records":[{"offset","type","version","data"}, ...]}}, one JSON line each,
 * on standard input) back as a segment file, each record encoded by the release's own JSON
 * converters and record serde. So a log edited to hold one wrong record is a real segment,
 * read back through the same path as a cluster's.
 *
 * <p>Usage: {@code MetadataWrite OUT}. Each batch is a record batch of format v2 (KIP-98: the
 * header's CRC-32C over its attributes to its end, records with varint fields), uncompressed,
 * its base offset the first record's. A record given as {@code {"offset":N,"apiKey":K,"version":V}}
 * without a type is written with that frame and no body: a record type the release does not know.
 */
public final class MetadataWrite {
    private MetadataWrite() {
    }

    public static void main(String[] args) throws Exception {
        Class<?> mapperClass = Class.forName("com.fasterxml.jackson.databind.ObjectMapper");
        Object mapper = mapperClass.getConstructor().newInstance();
        Method readTree = mapperClass.getMethod("readTree", String.class);
        Class<?> node = Class.forName("com.fasterxml.jackson.databind.JsonNode");
        Method get = node.getMethod("get", String.class);
        Method asLong = node.getMethod("asLong");
        Method asText = node.getMethod("asText");
        Method size = node.getMethod("size");
        Method at = node.getMethod("get", int.class);
        Method readJson = MetadataJsonConverters.class.getMethod("readJson", node, short.class, short.class);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            Object batch = readTree.invoke(mapper, line);
            Object records = get.invoke(batch, "records");
            if (records == null) {
                continue;                    // a {"file": ...} line
            }
            int count = (int) size.invoke(records);
            List<Long> offsets = new ArrayList<>();
            List<byte[]> values = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Object rec = at.invoke(records, i);
                offsets.add((long) asLong.invoke(get.invoke(rec, "offset")));
                short version = (short) (long) asLong.invoke(get.invoke(rec, "version"));
                Object type = get.invoke(rec, "type");
                if (type == null) {          // a record type the release does not know: its frame alone
                    ByteBuffer raw = ByteBuffer.allocate(16);
                    writeUnsignedVarint(raw, 1);
                    writeUnsignedVarint(raw, (int) (long) asLong.invoke(get.invoke(rec, "apiKey")));
                    writeUnsignedVarint(raw, version);
                    values.add(java.util.Arrays.copyOf(raw.array(), raw.position()));
                    continue;
                }
                short apiKey = apiKey((String) asText.invoke(type));
                ApiMessage message = (ApiMessage) readJson.invoke(null, get.invoke(rec, "data"), apiKey, version);
                ApiMessageAndVersion value = new ApiMessageAndVersion(message, version);
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer buf = ByteBuffer.allocate(MetadataRecordSerde.INSTANCE.recordSize(value, cache));
                MetadataRecordSerde.INSTANCE.write(value, cache, new ByteBufferAccessor(buf));
                values.add(buf.array());
            }
            if (!offsets.isEmpty()) {
                out.write(batch(offsets, values));
            }
        }
        Files.write(Paths.get(args[0]), out.toByteArray());
    }

    /** The API key of a record type named as MetadataTail prints it (its class's simple name). */
    private static short apiKey(String simpleName) {
        for (MetadataRecordType t : MetadataRecordType.values()) {
            if (t.newMetadataRecord().getClass().getSimpleName().equals(simpleName)) {
                return t.id();
            }
        }
        throw new IllegalArgumentException("no metadata record type " + simpleName + " in this release");
    }

    /** One v2 record batch: the header (61 bytes), then each record with its varint fields. */
    private static byte[] batch(List<Long> offsets, List<byte[]> values) {
        long base = offsets.get(0);
        ByteBuffer records = ByteBuffer.allocate(64 + values.stream().mapToInt(v -> v.length + 32).sum());
        for (int i = 0; i < values.size(); i++) {
            byte[] v = values.get(i);
            ByteBuffer body = ByteBuffer.allocate(v.length + 32);
            body.put((byte) 0);                              // attributes
            writeVarlong(body, 0);                           // timestamp delta
            writeVarlong(body, offsets.get(i) - base);       // offset delta
            writeVarlong(body, -1);                          // no key
            writeVarlong(body, v.length);
            body.put(v);
            writeVarlong(body, 0);                           // no headers
            writeVarlong(records, body.position());
            records.put(body.array(), 0, body.position());
        }
        int recordsBytes = records.position();
        ByteBuffer b = ByteBuffer.allocate(61 + recordsBytes);
        b.putLong(base);
        b.putInt(61 - 12 + recordsBytes);                    // batch length, after this field
        b.putInt(1);                                         // partition leader epoch
        b.put((byte) 2);                                     // magic
        b.putInt(0);                                         // CRC, set below
        b.putShort((short) 0);                               // attributes: uncompressed, not control
        b.putInt((int) (offsets.get(offsets.size() - 1) - base));
        b.putLong(0);                                        // base timestamp
        b.putLong(0);                                        // max timestamp
        b.putLong(-1);                                       // producer id
        b.putShort((short) -1);                              // producer epoch
        b.putInt(-1);                                        // base sequence
        b.putInt(values.size());
        b.put(records.array(), 0, recordsBytes);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 21, b.capacity() - 21);
        b.putInt(17, (int) crc.getValue());
        return b.array();
    }

    private static void writeUnsignedVarint(ByteBuffer buf, int value) {
        while ((value & ~0x7f) != 0) {
            buf.put((byte) ((value & 0x7f) | 0x80));
            value >>>= 7;
        }
        buf.put((byte) value);
    }

    private static void writeVarlong(ByteBuffer buf, long value) {
        long v = (value << 1) ^ (value >> 63);
        while ((v & ~0x7fL) != 0) {
            buf.put((byte) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        buf.put((byte) v);
    }
}
