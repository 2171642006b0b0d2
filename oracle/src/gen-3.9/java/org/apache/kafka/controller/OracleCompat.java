/*
 * kraft-verify's oracle: the calls whose signatures differ between Kafka's controller APIs, for
 * Kafka 3.9 to 4.2 (one API generation; oracle/src/gen-* holds one per generation and the Maven build
 * compiles the one oracle.gen names, oracle/pom.xml). Each call is the one QuorumController
 * makes, with the arguments it passes.
 */
package org.apache.kafka.controller;

import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.requests.ApiError;

import java.util.Map;
import java.util.Set;

final class OracleCompat {
    private OracleCompat() {
    }

    static ControllerResult<CreateTopicsResponseData> createTopics(ReplicationControlManager rcm,
                                                                   ControllerRequestContext context,
                                                                   CreateTopicsRequestData request) {
        return rcm.createTopics(context, request, Set.of(OracleCluster.TOPIC));
    }

    static ControllerResult<Map<ConfigResource, ApiError>> incrementalAlterConfigs(
            ConfigurationControlManager configurationControl,
            Map<ConfigResource, Map<String, Map.Entry<OpType, String>>> changes) {
        return configurationControl.incrementalAlterConfigs(changes, false);
    }
}
