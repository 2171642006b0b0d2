/*
 * kraft-verify's oracle: the controller managers of Kafka 3.9, built as its QuorumController
 * builds them, and the calls whose form differs from 4.x (src/kafka4 holds 4.x's): ELR is a
 * controller setting there, which needs metadata 4.0-IV0, unstable in 3.9 (off in every release
 * preset; on only where asked, at that version, as 3.9's own tests run it), a new incarnation
 * goes through the unclean-shutdown handler (which does nothing below metadata 4.0-IV0), and a
 * broker's session is its heartbeat manager's last contact time.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
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
            setQuorumFeatures(new QuorumFeatures(0, QuorumFeatures.defaultFeatureMap(true), List.of(0))).
            build();
    }

    /** 3.9's newest production metadata version (or 3.5-IV2, the last that bumps the leader
     * epoch on an ISR shrink); with ELR, the unstable 4.0-IV0 (ELR is not a feature in 3.9: the
     * controller's setting and this version turn it on, MetadataVersion.isElrSupported). */
    static List<ApiMessageAndVersion> bootstrapFeatures(boolean elr, boolean isrShrinkBumpsLeaderEpoch) {
        if (elr && isrShrinkBumpsLeaderEpoch) throw new IllegalArgumentException("ELR needs metadata 4.0-IV0");
        MetadataVersion mv = elr ? MetadataVersion.IBP_4_0_IV0 :
            isrShrinkBumpsLeaderEpoch ? MetadataVersion.IBP_3_5_IV2 : MetadataVersion.LATEST_PRODUCTION;
        return List.of(new ApiMessageAndVersion(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME).
            setFeatureLevel(mv.featureLevel()), (short) 0));
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
            setBrokerUncleanShutdownHandler((brokerId, records) ->
                replicationControl[0].handleBrokerUncleanShutdown(brokerId, records)).
            build();
    }

    static ConfigurationControlManager configurationControl(SnapshotRegistry registry,
                                                            FeatureControlManager featureControl) {
        return new ConfigurationControlManager.Builder().
            setSnapshotRegistry(registry).
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
            setEligibleLeaderReplicasEnabled(elr).
            build();
    }

    /** A broker's supported metadata versions: up to the newest production one, or with ELR
     * the unstable 4.0-IV0 the cluster runs (a broker with unstable versions enabled). */
    static void addFeatures(BrokerRegistrationRequestData request, boolean elr) {
        BrokerRegistrationRequestData.FeatureCollection features = new BrokerRegistrationRequestData.FeatureCollection();
        features.add(new BrokerRegistrationRequestData.Feature().setName(MetadataVersion.FEATURE_NAME).
            setMinSupportedVersion(MetadataVersion.MINIMUM_KRAFT_VERSION.featureLevel()).
            setMaxSupportedVersion((elr ? MetadataVersion.IBP_4_0_IV0 : MetadataVersion.LATEST_PRODUCTION).featureLevel()));
        request.setFeatures(features);
    }

    /** 3.9's registerBroker has no clean-shutdown detection (every new incarnation goes to the
     * unclean-shutdown handler). */
    static ControllerResult<?> registerBroker(ClusterControlManager clusterControl, FeatureControlManager featureControl,
                                              BrokerRegistrationRequestData request, long newBrokerEpoch,
                                              boolean cleanShutdownDetection) {
        FinalizedControllerFeatures features = featureControl.finalizedFeatures(Long.MAX_VALUE);
        return clusterControl.registerBroker(request, newBrokerEpoch,
            new FinalizedControllerFeatures(features.featureMap(), Long.MAX_VALUE));
    }

    /** 3.9 notes a contact inside processBrokerHeartbeat itself. */
    static void trackHeartbeat(ClusterControlManager clusterControl, int broker, long epoch) {
    }

    /** Whether a standby controller takes a heartbeat: in 3.9 QuorumController.processBrokerHeartbeat
     * is a write event only, refused NOT_CONTROLLER before any manager sees it. */
    static boolean standbyTracksHeartbeat(ClusterControlManager clusterControl, int broker, long epoch) {
        return false;
    }

    /** The broker's last contact lies more than a session timeout in the past: the clock moves
     * on while every other registered broker keeps its session by heartbeating. */
    static void expireSession(ClusterControlManager clusterControl, int broker, long epoch, ManualTime time,
                              long sessionTimeoutNs) {
        BrokerHeartbeatManager manager = clusterControl.heartbeatManager();
        List<BrokerRegistration> live = new ArrayList<>();
        for (BrokerRegistration r : clusterControl.brokerRegistrations().values()) {
            if (r.id() != broker && manager.hasValidSession(r.id())) live.add(r);
        }
        time.sleep(sessionTimeoutNs / 1_000_000L + 1);
        for (BrokerRegistration r : live) {
            manager.touch(r.id(), r.fenced(), manager.brokers().stream().filter(b -> b.id() == r.id()).
                findFirst().map(b -> b.metadataOffset).orElse(-1L));
        }
    }

    static void forgetSession(ClusterControlManager clusterControl, int broker) {
        clusterControl.heartbeatManager().fence(broker);
    }

    /** 3.9's stale-broker event fences the oldest unfenced broker past its session. */
    static List<ApiMessageAndVersion> fenceStaleBrokers(ReplicationControlManager rcm, OracleCluster cluster) {
        List<ApiMessageAndVersion> all = new ArrayList<>();
        while (true) {
            ControllerResult<Void> result = rcm.maybeFenceOneStaleBroker();
            cluster.replay(result.records());
            all.addAll(result.records());
            if (result.records().isEmpty()) return all;
        }
    }

    static void replay(OracleCluster c, ApiMessage message, long offset) {
        if (!OracleReplay.replay(c, message, offset)) {
            throw new IllegalStateException("the oracle cannot replay " + message.getClass().getSimpleName());
        }
    }
}
