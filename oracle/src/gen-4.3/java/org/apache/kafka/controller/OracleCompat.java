/*
 * kraft-verify's oracle: the controller-manager API of Kafka 4.3 and 4.4 (one API generation).
 *
 * Everything the driver calls whose signature changed between Kafka releases goes through
 * this class; oracle/src/gen-* holds one copy per generation and the Maven build picks the
 * one for the Kafka version it compiles against (oracle/pom.xml). The calls are those
 * QuorumController makes, with the arguments it passes.
 */
package org.apache.kafka.controller;

import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.ClearElrRecord;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.FenceBrokerRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.metadata.UnfenceBrokerRecord;
import org.apache.kafka.common.metadata.UnregisterBrokerRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.EligibleLeaderReplicasVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;

final class OracleCompat {
    private OracleCompat() {
    }

    static String kafkaVersion() {
        return AppInfoParser.getVersion();
    }

    /** The metadata version a cluster created at this release runs. */
    static MetadataVersion metadataVersion() {
        return MetadataVersion.LATEST_PRODUCTION;
    }

    static FeatureControlManager featureControl(SnapshotRegistry registry, LogContext logContext) {
        return new FeatureControlManager.Builder().
            setLogContext(logContext).
            setSnapshotRegistry(registry).
            setQuorumFeatures(new QuorumFeatures(0, QuorumFeatures.defaultSupportedFeatureMap(false), List.of(0))).
            build();
    }

    /** The bootstrap feature records: this release's metadata version (or 3.5-IV2, the last that
     * bumps the leader epoch on an ISR shrink), and ELR on or off. */
    static List<ApiMessageAndVersion> bootstrapFeatures(boolean elr, boolean isrShrinkBumpsLeaderEpoch) {
        List<ApiMessageAndVersion> out = new ArrayList<>();
        MetadataVersion mv = isrShrinkBumpsLeaderEpoch ? MetadataVersion.IBP_3_5_IV2 : metadataVersion();
        out.add(new ApiMessageAndVersion(new FeatureLevelRecord().
            setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(mv.featureLevel()), (short) 0));
        out.add(new ApiMessageAndVersion(new FeatureLevelRecord().
            setName(EligibleLeaderReplicasVersion.FEATURE_NAME).
            setFeatureLevel(elr ? EligibleLeaderReplicasVersion.ELRV_1.featureLevel()
                : EligibleLeaderReplicasVersion.ELRV_0.featureLevel()), (short) 0));
        return out;
    }

    static ClusterControlManager clusterControl(LogContext logContext, String clusterId, ManualTime time,
                                                SnapshotRegistry registry, long sessionTimeoutNs,
                                                FeatureControlManager featureControl,
                                                ClusterControlManager.BrokerShutdownHandler handler) {
        return new ClusterControlManager.Builder().
            setLogContext(logContext).
            setClusterId(clusterId).
            setTime(time).
            setSnapshotRegistry(registry).
            setSessionTimeoutNs(sessionTimeoutNs).
            setReplicaPlacer(new StripedReplicaPlacer(new Random(0))).
            setFeatureControlManager(featureControl).
            setBrokerShutdownHandler(handler).
            build();
    }

    static ConfigurationControlManager configurationControl(LogContext logContext, SnapshotRegistry registry,
                                                            FeatureControlManager featureControl) {
        return new ConfigurationControlManager.Builder().
            setLogContext(logContext).
            setSnapshotRegistry(registry).
            setFeatureControl(featureControl).
            setKafkaConfigSchema(OracleConfigSchema.INSTANCE).
            build();
    }

    static ReplicationControlManager replicationControl(LogContext logContext, SnapshotRegistry registry,
                                                        ConfigurationControlManager configurationControl,
                                                        ClusterControlManager clusterControl,
                                                        FeatureControlManager featureControl) {
        return new ReplicationControlManager.Builder().
            setSnapshotRegistry(registry).
            setLogContext(logContext).
            setConfigurationControl(configurationControl).
            setClusterControl(clusterControl).
            setFeatureControl(featureControl).
            build();
    }

    static void handleBrokerShutdown(ReplicationControlManager rcm, int brokerId, boolean clean,
                                     List<ApiMessageAndVersion> records) {
        rcm.handleBrokerShutdown(brokerId, clean, records);
    }

    static void addFeatures(BrokerRegistrationRequestData request, FeatureControlManager featureControl) {
        BrokerRegistrationRequestData.FeatureCollection features = new BrokerRegistrationRequestData.FeatureCollection();
        features.add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME).
            setMinSupportedVersion(MetadataVersion.MINIMUM_VERSION.featureLevel()).
            setMaxSupportedVersion(metadataVersion().featureLevel()));
        features.add(new BrokerRegistrationRequestData.Feature().setName(EligibleLeaderReplicasVersion.FEATURE_NAME).
            setMinSupportedVersion((short) 0).
            setMaxSupportedVersion(EligibleLeaderReplicasVersion.ELRV_1.featureLevel()));
        request.setFeatures(features);
    }

    /** QuorumController.registerBroker: the epoch is the next offset; clean-shutdown detection
     * is on for BrokerRegistration version 3 and later. */
    static ControllerResult<?> registerBroker(ClusterControlManager clusterControl, FeatureControlManager featureControl,
                                              BrokerRegistrationRequestData request, long newBrokerEpoch,
                                              boolean cleanShutdownDetection) {
        FinalizedControllerFeatures features = featureControl.finalizedFeatures(Long.MAX_VALUE);
        return clusterControl.registerBroker(request, newBrokerEpoch,
            new FinalizedControllerFeatures(features.featureMap(), Long.MAX_VALUE), cleanShutdownDetection);
    }

    /** The broker's last contact lies more than a session timeout in the past. */
    static void expireSession(ClusterControlManager clusterControl, int broker, long epoch, ManualTime time,
                              long sessionTimeoutNs) {
        BrokerHeartbeatTracker tracker = clusterControl.heartbeatManager().tracker();
        BrokerIdAndEpoch key = new BrokerIdAndEpoch(broker, epoch);
        if (tracker.contactTime(key).isPresent()) {
            tracker.updateContactTime(key, time.nanoseconds() - sessionTimeoutNs - 1);
        }
    }

    /** The broker has no session any more (a snapshot's fenced broker). */
    static void forgetSession(ClusterControlManager clusterControl, int broker) {
        clusterControl.heartbeatManager().fence(broker);
    }

    static ControllerResult<?> heartbeat(ReplicationControlManager rcm, BrokerHeartbeatRequestData request,
                                         long registerBrokerRecordOffset) {
        return rcm.processBrokerHeartbeat(request, registerBrokerRecordOffset);
    }

    static ControllerRequestContext context(ApiKeys api, short version) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(api.id).
            setRequestApiVersion(version), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    static ControllerResult<AlterPartitionResponseData> alterPartition(ReplicationControlManager rcm,
                                                                       AlterPartitionRequestData request,
                                                                       short version) {
        return rcm.alterPartition(context(ApiKeys.ALTER_PARTITION, version), request);
    }

    static ControllerResult<CreateTopicsResponseData> createTopics(ReplicationControlManager rcm,
                                                                   CreateTopicsRequestData request) {
        return rcm.createTopics(context(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.latestVersion()), request,
            Set.of(OracleCluster.TOPIC), false);
    }

    static ControllerResult<Map<ConfigResource, ApiError>> incrementalAlterConfigs(
            ConfigurationControlManager configurationControl,
            Map<ConfigResource, Map<String, Map.Entry<OpType, String>>> changes) {
        return configurationControl.incrementalAlterConfigs(changes, false, true);
    }

    static boolean isrShrinkBumpsLeaderEpoch(FeatureControlManager featureControl) {
        return featureControl.metadataVersionOrThrow().isLeaderEpochBumpRequiredOnIsrShrink();
    }

    static boolean directoriesSupported(FeatureControlManager featureControl) {
        return featureControl.metadataVersionOrThrow().isDirectoryAssignmentSupported();
    }

    /** QuorumController.replay's dispatch, for the record types this driver can produce. */
    static void replay(OracleCluster c, ApiMessage message, long offset) {
        if (message instanceof RegisterBrokerRecord) c.clusterControl.replay((RegisterBrokerRecord) message, offset);
        else if (message instanceof UnregisterBrokerRecord) c.clusterControl.replay((UnregisterBrokerRecord) message);
        else if (message instanceof BrokerRegistrationChangeRecord) {
            c.clusterControl.replay((BrokerRegistrationChangeRecord) message);
        } else if (message instanceof FenceBrokerRecord) c.clusterControl.replay((FenceBrokerRecord) message);
        else if (message instanceof UnfenceBrokerRecord) c.clusterControl.replay((UnfenceBrokerRecord) message);
        else if (message instanceof TopicRecord) c.replicationControl.replay((TopicRecord) message);
        else if (message instanceof PartitionRecord) c.replicationControl.replay((PartitionRecord) message);
        else if (message instanceof PartitionChangeRecord) c.replicationControl.replay((PartitionChangeRecord) message);
        else if (message instanceof ClearElrRecord) c.replicationControl.replay((ClearElrRecord) message);
        else if (message instanceof ConfigRecord) c.configurationControl.replay((ConfigRecord) message);
        else if (message instanceof FeatureLevelRecord) c.featureControl.replay((FeatureLevelRecord) message);
        else throw new IllegalStateException("the oracle cannot replay " + message.getClass().getSimpleName());
    }
}
