/*
 * kraft-verify's oracle: drives one Kafka release's own controller classes with a trace
 * and reports the controller's state after every step.
 *
 * Protocol (one JSON document per line on stdin, one answer per line on stdout):
 *   {"init": {...}, "ops": [op, ...]}  ->  {"states": [state after init, state after op 1, ...]}
 * An answer {"fatal": "..."} means the driver could not run the trace at all (a bad
 * request, never a verdict). The op vocabulary is the set of controller requests and
 * periodic tasks that kraft-verify's model steps are projected onto
 * (verifier/engines/conform/project.py); OracleCluster says what each one calls.
 *
 * The class lives in package org.apache.kafka.controller because the controller managers'
 * builders and most of their methods are package-private, as Kafka's own
 * ReplicationControlManagerTest finds them. It is kraft-verify's code, not Kafka's.
 */
package org.apache.kafka.controller;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class KraftVerifyOracle {
    private KraftVerifyOracle() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--version")) {
            System.out.println(OracleCluster.kafkaVersion());
            return;
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            StringBuilder answer = new StringBuilder(4096);
            OracleJson.write(answer, run(line));
            out.write(answer.toString());
            out.write('\n');
            out.flush();
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> run(String line) {
        Map<String, Object> answer = new LinkedHashMap<>();
        Map<String, Object> request;
        try {
            request = (Map<String, Object>) OracleJson.parse(line);
        } catch (RuntimeException e) {
            answer.put("fatal", "unreadable request: " + e.getMessage());
            return answer;
        }
        List<Object> states = new ArrayList<>();
        try {
            OracleCluster cluster = new OracleCluster((Map<String, Object>) request.get("init"));
            states.add(cluster.dump(null));
            for (Object op : (List<Object>) request.get("ops")) {
                states.add(cluster.apply((Map<String, Object>) op));
            }
        } catch (RuntimeException e) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            answer.put("fatal", e + " at step " + states.size() + "\n" + trace);
            answer.put("states", states);
            return answer;
        }
        answer.put("states", states);
        answer.put("kafka", VERSION);
        return answer;
    }

    /** The release whose classes answer (checked by the caller against the one it asked for). */
    static final String VERSION = OracleCluster.kafkaVersion();
}
