/*
 * kraft-verify's oracle: requests outside the model ("probe" ops). Each names something the
 * model does not have (another cluster, a ZooKeeper broker, log directories, a topic or
 * partition the controller does not know, an AlterPartition of version 2, an election of
 * every partition, another topic (named with a dot), a heartbeat that is behind or asks to stay fenced, a standby
 * controller that replays the log and takes over) and is sent to the same
 * controller managers as every other op, its records replayed. The model's claim
 * (specs/actions/control.py, unmodelled_request) is that each leaves everything the model holds
 * as it was, answered with the error it names: conform compares the state and the error.
 * It is kraft-verify's code, not Kafka's.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

final class OracleProbes {
    static final int STRANGER = 9;        // a broker id no registration has

    private OracleProbes() {
    }

    /** A probe the driver cannot send (an unknown kind, or a state it needs and lacks): fatal. */
    static final class BadProbe extends IllegalArgumentException {
        BadProbe(String why) {
            super(why);
        }
    }

    static String probe(OracleCluster c, String kind) {
        try {
            switch (kind) {
                case "register_other_cluster": return register(c, request(c, STRANGER).setClusterId("another-cluster"));
                case "register_zk_broker": return register(c, request(c, STRANGER).setIsMigratingZkBroker(true));
                case "register_no_log_dirs": return register(c, request(c, STRANGER).setLogDirs(List.of()));
                case "register_reserved_log_dir":
                    return register(c, request(c, STRANGER).setLogDirs(List.of(DirectoryId.UNASSIGNED)));
                case "register_duplicate_log_dirs": {
                    Uuid dir = Uuid.randomUuid();
                    return register(c, request(c, STRANGER).setLogDirs(List.of(dir, dir)));
                }
                case "register_log_dir_of_another_broker":
                    return register(c, request(c, STRANGER).setLogDirs(List.of(c.logDirs.get(firstBroker(c)))));
                case "register_without_metadata_version": {
                    BrokerRegistrationRequestData request = request(c, STRANGER);
                    request.features().remove(request.features().find(MetadataVersion.FEATURE_NAME));
                    return register(c, request);
                }
                case "register_while_session_valid": {       // a new incarnation, the old one still heartbeating
                    int broker = firstBroker(c);
                    return register(c, request(c, broker).setLogDirs(List.of(c.logDirs.get(broker))));
                }
                case "register_same_incarnation": {          // the incarnation registered amends its registration
                    int broker = firstBroker(c);
                    BrokerRegistration existing = c.clusterControl.brokerRegistrations().get(broker);
                    return register(c, request(c, broker).setIncarnationId(existing.incarnationId()).
                        setLogDirs(List.of(c.logDirs.get(broker))));
                }
                case "alter_partition_unknown_topic": return alterPartition(c, Uuid.randomUuid(), 0, (short) 3);
                case "alter_partition_zero_topic_id": return alterPartition(c, Uuid.ZERO_UUID, 0, (short) 3);
                case "alter_partition_unknown_partition": return alterPartition(c, c.topicId(), 7, (short) 3);
                case "alter_partition_version_2_stale": return alterPartition(c, c.topicId(), 0, (short) 2);
                case "elect_every_partition": return c.elect("preferred", null, 0);
                case "elect_unknown_topic": return c.elect("preferred", "another-topic", 0);
                case "elect_unknown_partition": return c.elect("preferred", OracleCluster.TOPIC, 7);
                case "reassign_unknown_topic": return c.reassign("another-topic", List.of(1), 0);
                case "reassign_unknown_partition": return c.reassign(OracleCluster.TOPIC, List.of(1), 7);
                case "cancel_reassignment_none_in_progress": return c.reassign(OracleCluster.TOPIC, null, 0);
                case "create_topic_with_dot": return createTopic(c, "kraft.verify.other");
                case "cancel_reassignment_of_another_topic": return cancelElsewhere(c);
                case "heartbeat_behind_metadata": return c.heartbeat(lastFenced(c), false, false, -1L);
                case "heartbeat_wants_fence": return c.heartbeat(lastFenced(c), true, false);
                case "standby_takes_over": return standbyTakesOver(c, false);
                case "standby_takes_over_missing_last_record": return standbyTakesOver(c, true);
                default: throw new BadProbe("unknown probe " + kind);
            }
        } catch (BadProbe e) {
            throw e;
        } catch (RuntimeException e) {
            return OracleCluster.errorName(e);
        }
    }

    private static int firstBroker(OracleCluster c) {
        return c.clusterControl.brokerRegistrations().keySet().stream().min(Integer::compare).orElseThrow();
    }

    /** A first registration of `broker` as OracleCluster.register makes one (a directory of its own). */
    private static BrokerRegistrationRequestData request(OracleCluster c, int broker) {
        return c.registration(broker, Uuid.randomUuid(), -1L, Uuid.randomUuid());
    }

    private static String register(OracleCluster c, BrokerRegistrationRequestData request) {
        ControllerResult<?> result = OracleManagers.registerBroker(c.clusterControl, c.featureControl, request,
            c.lastOffset() + 1, true);
        c.replay(result.records());
        return null;
    }

    /** An AlterPartition from the leader at its registered epoch, proposing the ISR as it is, at
     * leader epoch -1 (older than any): refused unless something before the epoch check refuses it. */
    private static String alterPartition(OracleCluster c, Uuid topicId, int partition, short version) {
        PartitionRegistration p = c.replicationControl.getPartition(c.topicId(), 0);
        BrokerRegistration leader = c.clusterControl.brokerRegistrations().get(p.leader);
        AlterPartitionRequestData.PartitionData data = new AlterPartitionRequestData.PartitionData().
            setPartitionIndex(partition).setLeaderEpoch(-1).setPartitionEpoch(p.partitionEpoch);
        List<AlterPartitionRequestData.BrokerState> isr = new ArrayList<>();
        List<Integer> plain = new ArrayList<>();
        for (int b : p.isr) {
            isr.add(new AlterPartitionRequestData.BrokerState().setBrokerId(b).setBrokerEpoch(-1L));
            plain.add(b);
        }
        if (version < 3) data.setNewIsr(plain);
        else data.setNewIsrWithEpochs(isr);
        AlterPartitionRequestData request = new AlterPartitionRequestData().
            setBrokerId(p.leader).setBrokerEpoch(leader == null ? -1L : leader.epoch());
        AlterPartitionRequestData.TopicData topic = new AlterPartitionRequestData.TopicData().setTopicId(topicId);
        topic.partitions().add(data);
        request.topics().add(topic);
        ControllerResult<AlterPartitionResponseData> result = c.replicationControl.alterPartition(
            OracleCluster.context(ApiKeys.ALTER_PARTITION, version), request);
        c.replay(result.records());
        return OracleCluster.code(result.response().topics().get(0).partitions().get(0).errorCode());
    }

    /** Another topic of one partition on the partition's replicas (its records replayed): the
     * model's topic is not touched. */
    private static String createTopic(OracleCluster c, String name) {
        List<Integer> replicas = new ArrayList<>();
        for (int r : c.replicationControl.getPartition(c.topicId(), 0).replicas) replicas.add(r);
        return OracleCluster.code(c.createTopic(name, 1, replicas, Map.of()).errorCode());
    }

    /** Two other topics of one partition on the partition's first two replicas, one with unclean
     * leader election off and one with it on, each reassigned to add the third replica (in
     * progress: it never fetches, so never joins the ISR) and the reassignment cancelled,
     * reverted by cancelPartitionReassignment (an unclean election where the topic allows it):
     * the first error on the way, or none. Topics of their own each time (named by the log's
     * end), the model's untouched. */
    private static String cancelElsewhere(OracleCluster c) {
        int[] replicas = c.replicationControl.getPartition(c.topicId(), 0).replicas;
        if (replicas.length < 3) throw new BadProbe("a cancelled reassignment of another topic needs three replicas");
        for (String unclean : List.of("false", "true")) {
            String name = "kraft-verify-reassigned-" + (c.lastOffset() + 1);
            String error = OracleCluster.code(c.createTopic(name, 1, List.of(replicas[0], replicas[1]),
                Map.of(OracleCluster.UNCLEAN, unclean)).errorCode());
            if (error == null) error = c.reassign(name, List.of(replicas[0], replicas[1], replicas[2]), 0);
            if (error == null) error = c.reassign(name, null, 0);
            if (error != null) return error;
        }
        return null;
    }

    /** A failover: a standby controller replays the active one's whole metadata log, is sent a
     * heartbeat by every registered broker (none taken: QuorumController answers NOT_CONTROLLER),
     * then becomes active (ClusterControlManager.activate, as QuorumController's claim does).
     * Everything the model holds (partitions, registrations, ELR index, configs) must read the
     * same in it as in the active controller, which is left as it was. `dropLast`: the standby
     * misses the log's last record (the driver's own test that a difference is answered). */
    private static String standbyTakesOver(OracleCluster c, boolean dropLast) {
        OracleCluster standby = OracleCluster.standby(c, dropLast);
        for (BrokerRegistration r : standby.clusterControl.brokerRegistrations().values()) {
            if (OracleManagers.standbyTracksHeartbeat(standby.clusterControl, r.id(), r.epoch())) {
                return "STANDBY_TOOK_HEARTBEAT";
            }
        }
        standby.clusterControl.activate();
        Map<String, Object> active = c.dump(null), taken = standby.dump(null);
        for (String field : active.keySet()) {
            if (!field.equals("records") && !json(active.get(field)).equals(json(taken.get(field)))) {
                return "STANDBY_DIFFERS(" + field + ": " + json(taken.get(field)) + ")";
            }
        }
        return null;
    }

    /** A value of the state report as JSON (int arrays compared by value). */
    private static String json(Object value) {
        StringBuilder b = new StringBuilder();
        OracleJson.write(b, value);
        return b.toString();
    }

    /** The fenced broker of the highest id (a heartbeat probe's sender). */
    private static int lastFenced(OracleCluster c) {
        int broker = -1;
        for (BrokerRegistration r : c.clusterControl.brokerRegistrations().values()) {
            if (r.fenced() && r.id() > broker) broker = r.id();
        }
        if (broker < 0) throw new BadProbe("a heartbeat probe needs a fenced broker");
        return broker;
    }
}
