/*
 * kraft-verify's oracle: the controller managers of Kafka 4.x, built as QuorumController builds
 * them, and the calls whose form is the same in every 4.x release (src/kafka4 is compiled for
 * every 4.x API generation; src/kafka3 holds 3.9's). What differs inside 4.x is in OracleCompat
 * (src/gen-*). The builders' defaults stand for what needs no value here (log contexts).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.metadata.ClearElrRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.EligibleLeaderReplicasVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

final class OracleManagers {
    private OracleManagers() {
    }

    static FeatureControlManager featureControl(SnapshotRegistry registry) {
        return new FeatureControlManager.Builder().
            setSnapshotRegistry(registry).
            setQuorumFeatures(new QuorumFeatures(0, QuorumFeatures.defaultSupportedFeatureMap(true), List.of(0))).
            build();
    }

    /** The bootstrap feature records: this release's newest production metadata version (or
     * 3.5-IV2, the last that bumps the leader epoch on an ISR shrink), and ELR on or off. */
    static List<ApiMessageAndVersion> bootstrapFeatures(boolean elr, boolean isrShrinkBumpsLeaderEpoch) {
        MetadataVersion mv = isrShrinkBumpsLeaderEpoch ? MetadataVersion.IBP_3_5_IV2 : MetadataVersion.LATEST_PRODUCTION;
        return List.of(
            new ApiMessageAndVersion(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME).
                setFeatureLevel(mv.featureLevel()), (short) 0),
            new ApiMessageAndVersion(new FeatureLevelRecord().setName(EligibleLeaderReplicasVersion.FEATURE_NAME).
                setFeatureLevel(elr ? EligibleLeaderReplicasVersion.ELRV_1.featureLevel()
                    : EligibleLeaderReplicasVersion.ELRV_0.featureLevel()), (short) 0));
    }

    static ClusterControlManager clusterControl(String clusterId, ManualTime time, SnapshotRegistry registry,
                                                long sessionTimeoutNs, FeatureControlManager featureControl,
                                                ReplicationControlManager[] replicationControl) {
        return new ClusterControlManager.Builder().
            setClusterId(clusterId).
            setTime(time).
            setSnapshotRegistry(registry).
            setSessionTimeoutNs(sessionTimeoutNs).
            setReplicaPlacer(new StripedReplicaPlacer(new Random(0))).
            setFeatureControlManager(featureControl).
            setBrokerShutdownHandler((brokerId, clean, records) ->
                replicationControl[0].handleBrokerShutdown(brokerId, clean, records)).
            build();
    }

    static ConfigurationControlManager configurationControl(SnapshotRegistry registry,
                                                            FeatureControlManager featureControl) {
        return new ConfigurationControlManager.Builder().
            setSnapshotRegistry(registry).
            setFeatureControl(featureControl).
            setKafkaConfigSchema(OracleConfigSchema.INSTANCE).
            build();
    }

    static ReplicationControlManager replicationControl(SnapshotRegistry registry,
                                                        ConfigurationControlManager configurationControl,
                                                        ClusterControlManager clusterControl,
                                                        FeatureControlManager featureControl, boolean elr) {
        return new ReplicationControlManager.Builder().
            setSnapshotRegistry(registry).
            setConfigurationControl(configurationControl).
            setClusterControl(clusterControl).
            setFeatureControl(featureControl).
            build();
    }

    /** A broker of this release supports every metadata version up to the newest production one
     * and both ELR levels (`elr` changes nothing: it is 3.9's, whose ELR needs an unstable version). */
    static void addFeatures(BrokerRegistrationRequestData request, boolean elr) {
        BrokerRegistrationRequestData.FeatureCollection features = new BrokerRegistrationRequestData.FeatureCollection();
        features.add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME).
            setMinSupportedVersion(MetadataVersion.MINIMUM_VERSION.featureLevel()).
            setMaxSupportedVersion(MetadataVersion.LATEST_PRODUCTION.featureLevel()));
        features.add(new BrokerRegistrationRequestData.Feature().setName(EligibleLeaderReplicasVersion.FEATURE_NAME).
            setMinSupportedVersion((short) 0).
            setMaxSupportedVersion(EligibleLeaderReplicasVersion.ELRV_1.featureLevel()));
        request.setFeatures(features);
    }

    /** QuorumController.registerBroker: clean-shutdown detection is on for BrokerRegistration
     * version 3 and later. */
    static ControllerResult<?> registerBroker(ClusterControlManager clusterControl, FeatureControlManager featureControl,
                                              BrokerRegistrationRequestData request, long newBrokerEpoch,
                                              boolean cleanShutdownDetection) {
        FinalizedControllerFeatures features = featureControl.finalizedFeatures(Long.MAX_VALUE);
        return clusterControl.registerBroker(request, newBrokerEpoch,
            new FinalizedControllerFeatures(features.featureMap(), Long.MAX_VALUE), cleanShutdownDetection);
    }

    /** What QuorumController does on a heartbeat before its event runs: note the contact. */
    static void trackHeartbeat(ClusterControlManager clusterControl, int broker, long epoch) {
        clusterControl.trackBrokerHeartbeat(broker, epoch);
    }

    /** Whether a standby controller takes a heartbeat (QuorumController.processBrokerHeartbeat
     * tracks it before its write event, and answers NOT_CONTROLLER when this is false). */
    static boolean standbyTracksHeartbeat(ClusterControlManager clusterControl, int broker, long epoch) {
        return clusterControl.trackBrokerHeartbeat(broker, epoch);
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

    /** The periodic stale-broker task, run until it finds nothing more to do. */
    static List<ApiMessageAndVersion> fenceStaleBrokers(ReplicationControlManager rcm, OracleCluster cluster) {
        List<ApiMessageAndVersion> all = new ArrayList<>();
        while (true) {
            ControllerResult<Boolean> result = rcm.maybeFenceOneStaleBroker();
            cluster.replay(result.records());
            all.addAll(result.records());
            if (!result.response()) return all;
        }
    }

    /** QuorumController.replay's dispatch, for the record types the driver produces. */
    static void replay(OracleCluster c, ApiMessage message, long offset) {
        if (message instanceof ClearElrRecord) {
            c.replicationControl.replay((ClearElrRecord) message);
        } else if (!OracleReplay.replay(c, message, offset)) {
            throw new IllegalStateException("the oracle cannot replay " + message.getClass().getSimpleName());
        }
    }
}
