/*
 * kraft-verify's oracle: requests outside the model ("probe" ops). Each names something the
 * model does not have (another cluster, a ZooKeeper broker, log directories, a topic or
 * partition the controller does not know, an AlterPartition of version 2, an election of
 * every partition, another topic (named with a dot), a heartbeat that is behind or asks to stay fenced) and is sent to the same
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
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;

import java.util.ArrayList;
import java.util.List;

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
                case "elect_every_partition": return elect(c, null, 0);
                case "elect_unknown_topic": return elect(c, "another-topic", 0);
                case "elect_unknown_partition": return elect(c, OracleCluster.TOPIC, 7);
                case "reassign_unknown_topic": return reassign(c, "another-topic", 0, List.of(1));
                case "reassign_unknown_partition": return reassign(c, OracleCluster.TOPIC, 7, List.of(1));
                case "cancel_reassignment_none_in_progress": return reassign(c, OracleCluster.TOPIC, 0, null);
                case "create_topic_with_dot": return createTopic(c, "kraft.verify.other");
                case "heartbeat_behind_metadata": return heartbeat(c, false, -1L);
                case "heartbeat_wants_fence": return heartbeat(c, true, c.lastOffset());
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
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData().
            setBrokerId(broker).
            setClusterId(c.clusterId).
            setIncarnationId(Uuid.randomUuid()).
            setRack(null).
            setPreviousBrokerEpoch(-1L).
            setLogDirs(List.of(Uuid.randomUuid()));
        OracleManagers.addFeatures(request);
        return request;
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

    /** A preferred election of `topic`'s `partition`, or (topic null) of every partition: the
     * first partition's error, or none where the answer lists none (ELECTION_NOT_NEEDED is left out). */
    private static String elect(OracleCluster c, String topic, int partition) {
        ElectLeadersRequestData request = new ElectLeadersRequestData().setElectionType((byte) 0);
        if (topic == null) {
            request.setTopicPartitions(null);
        } else {
            ElectLeadersRequestData.TopicPartitions tp = new ElectLeadersRequestData.TopicPartitions().setTopic(topic);
            tp.partitions().add(partition);
            request.topicPartitions().add(tp);
        }
        ControllerResult<ElectLeadersResponseData> result = c.replicationControl.electLeaders(request);
        c.replay(result.records());
        for (ElectLeadersResponseData.ReplicaElectionResult r : result.response().replicaElectionResults()) {
            for (ElectLeadersResponseData.PartitionResult pr : r.partitionResult()) {
                String error = OracleCluster.code(pr.errorCode());
                if (error != null) return error;
            }
        }
        return null;
    }

    /** A reassignment of `topic`'s `partition` to `replicas`, or (null) its cancellation. */
    private static String reassign(OracleCluster c, String topic, int partition, List<Integer> replicas) {
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData();
        AlterPartitionReassignmentsRequestData.ReassignableTopic t =
            new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(topic);
        t.partitions().add(new AlterPartitionReassignmentsRequestData.ReassignablePartition().
            setPartitionIndex(partition).setReplicas(replicas));
        request.topics().add(t);
        ControllerResult<AlterPartitionReassignmentsResponseData> result =
            c.replicationControl.alterPartitionReassignments(request);
        c.replay(result.records());
        return OracleCluster.code(result.response().responses().get(0).partitions().get(0).errorCode());
    }

    /** Another topic of one partition on the partition's replicas (its records replayed): the
     * model's topic is not touched. */
    private static String createTopic(OracleCluster c, String name) {
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().
            setName(name).setNumPartitions(-1).setReplicationFactor((short) -1);
        List<Integer> replicas = new ArrayList<>();
        for (int r : c.replicationControl.getPartition(c.topicId(), 0).replicas) replicas.add(r);
        topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().
            setPartitionIndex(0).setBrokerIds(replicas));
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        request.topics().add(topic);
        ControllerResult<CreateTopicsResponseData> result = OracleCompat.createTopics(c.replicationControl,
            OracleCluster.context(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.latestVersion()), request);
        c.replay(result.records());
        return OracleCluster.code(result.response().topics().find(name).errorCode());
    }

    /** A heartbeat from the fenced broker of the highest id (each broker's current incarnation)
     * at metadata offset `offset`, asking to stay fenced or not. */
    private static String heartbeat(OracleCluster c, boolean wantFence, long offset) {
        int broker = -1;
        for (BrokerRegistration r : c.clusterControl.brokerRegistrations().values()) {
            if (r.fenced() && r.id() > broker) broker = r.id();
        }
        if (broker < 0) throw new BadProbe("a heartbeat probe needs a fenced broker");
        long epoch = c.clusterControl.brokerRegistrations().get(broker).epoch();
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData().setBrokerId(broker).
            setBrokerEpoch(epoch).setCurrentMetadataOffset(offset).setWantFence(wantFence).setWantShutDown(false);
        c.clusterControl.checkBrokerEpoch(broker, epoch);
        OracleManagers.trackHeartbeat(c.clusterControl, broker, epoch);
        long registerOffset = c.clusterControl.registerBrokerRecordOffset(broker).orElse(Long.MAX_VALUE);
        c.replay(c.replicationControl.processBrokerHeartbeat(request, registerOffset).records());
        return null;
    }
}
