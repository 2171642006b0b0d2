/*
 * kraft-verify's oracle: a minimal JSON reader and writer for the trace protocol.
 *
 * The protocol carries only objects, arrays, integers, strings, booleans and null, one
 * document per line, so a parser of about a hundred lines does the job and keeps the
 * driver free of a JSON library whose version would have to agree with the one each
 * Kafka release brings.
 */
package org.apache.kafka.controller;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class OracleJson {
    private final String text;
    private int pos;

    private OracleJson(String text) {
        this.text = text;
    }

    /** Parses one document: Map, List, Long, String, Boolean or null. */
    static Object parse(String text) {
        OracleJson p = new OracleJson(text);
        Object value = p.value();
        p.skip();
        if (p.pos != text.length()) {
            throw new IllegalArgumentException("trailing characters at " + p.pos);
        }
        return value;
    }

    private void skip() {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) pos++;
    }

    private char peek() {
        skip();
        if (pos >= text.length()) throw new IllegalArgumentException("unexpected end of input");
        return text.charAt(pos);
    }

    private void expect(char c) {
        if (peek() != c) throw new IllegalArgumentException("expected '" + c + "' at " + pos);
        pos++;
    }

    private Object value() {
        char c = peek();
        switch (c) {
            case '{': return object();
            case '[': return array();
            case '"': return string();
            case 't': literal("true"); return Boolean.TRUE;
            case 'f': literal("false"); return Boolean.FALSE;
            case 'n': literal("null"); return null;
            default: return number();
        }
    }

    private void literal(String word) {
        if (!text.startsWith(word, pos)) throw new IllegalArgumentException("bad literal at " + pos);
        pos += word.length();
    }

    private Map<String, Object> object() {
        expect('{');
        Map<String, Object> out = new LinkedHashMap<>();
        if (peek() == '}') {
            pos++;
            return out;
        }
        while (true) {
            String key = string();
            expect(':');
            out.put(key, value());
            char c = peek();
            pos++;
            if (c == '}') return out;
            if (c != ',') throw new IllegalArgumentException("expected ',' or '}' at " + (pos - 1));
        }
    }

    private List<Object> array() {
        expect('[');
        List<Object> out = new ArrayList<>();
        if (peek() == ']') {
            pos++;
            return out;
        }
        while (true) {
            out.add(value());
            char c = peek();
            pos++;
            if (c == ']') return out;
            if (c != ',') throw new IllegalArgumentException("expected ',' or ']' at " + (pos - 1));
        }
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (pos >= text.length()) throw new IllegalArgumentException("unterminated string");
            char c = text.charAt(pos++);
            if (c == '"') return b.toString();
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = text.charAt(pos++);
            switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16)); pos += 4; break;
                default: b.append(e);
            }
        }
    }

    private Long number() {
        int start = pos;
        if (text.charAt(pos) == '-') pos++;
        while (pos < text.length() && Character.isDigit(text.charAt(pos))) pos++;
        if (start == pos || (pos == start + 1 && text.charAt(start) == '-')) {
            throw new IllegalArgumentException("bad value at " + start);
        }
        return Long.parseLong(text.substring(start, pos));
    }

    /** Writes a value built of Map, Collection, int[], Number, Boolean, String and null. */
    static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof String) {
            b.append('"');
            for (char c : ((String) v).toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof int[]) {
            b.append('[');
            int[] xs = (int[]) v;
            for (int i = 0; i < xs.length; i++) {
                if (i > 0) b.append(',');
                b.append(xs[i]);
            }
            b.append(']');
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) b.append(',');
                first = false;
                write(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object x : (Iterable<?>) v) {
                if (!first) b.append(',');
                first = false;
                write(b, x);
            }
            b.append(']');
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass());
        }
    }
}
