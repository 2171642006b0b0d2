/*
 * kraft-verify's oracle: the two topic configs the model changes, with Kafka's defaults.
 *
 * A real controller gets its KafkaConfigSchema from the server's LogConfig and KafkaConfig
 * definitions (the core module, not among the jars the oracle loads). The controller managers
 * read only the definitions of the configs they resolve, so the schema here defines
 * min.insync.replicas (int, default 1) and unclean.leader.election.enable (boolean, default
 * false) at topic and broker level, each the synonym of itself, as Kafka's LogConfig does.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.server.config.ConfigSynonym;

import java.util.List;
import java.util.Map;

final class OracleConfigSchema {
    private OracleConfigSchema() {
    }

    private static ConfigDef definitions() {
        return new ConfigDef().
            define(OracleCluster.MIN_ISR, ConfigDef.Type.INT, "1", ConfigDef.Importance.HIGH, "").
            define(OracleCluster.UNCLEAN, ConfigDef.Type.BOOLEAN, "false", ConfigDef.Importance.HIGH, "");
    }

    static final KafkaConfigSchema INSTANCE = new KafkaConfigSchema(
        Map.of(ConfigResource.Type.TOPIC, definitions(), ConfigResource.Type.BROKER, definitions()),
        Map.of(OracleCluster.MIN_ISR, List.of(new ConfigSynonym(OracleCluster.MIN_ISR)),
            OracleCluster.UNCLEAN, List.of(new ConfigSynonym(OracleCluster.UNCLEAN))));
}
