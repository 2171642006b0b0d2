/*
 * kraft-verify's oracle: one Kafka release's controller managers on one SnapshotRegistry,
 * driven synchronously the way Kafka's own ReplicationControlManagerTest drives them, with
 * one topic of one partition, or of several ("partitions" in the init: each on the same
 * replicas; an op that is one partition's names it, "partition", 0 when absent; the report then
 * holds each partition's registration and ELR index entries under "partitions").
 *
 * Every op calls the manager method the QuorumController calls for that request or periodic
 * task, then replays the records it returns into the managers in order (the QuorumController's
 * replay dispatch), counting one offset per record as the metadata log would. Broker epochs
 * are those offsets, as in Kafka: a registration's epoch is the offset its batch starts at.
 * Version differences in the managers' APIs are kept in OracleCompat (one per API generation,
 * oracle/src/gen-*).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
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
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.metadata.BrokerHeartbeatReply;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.server.common.TopicIdPartition;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

final class OracleCluster {
    static final String TOPIC = "kraft-verify";
    static final String MIN_ISR = "min.insync.replicas";
    static final String UNCLEAN = "unclean.leader.election.enable";
    static final long SESSION_TIMEOUT_NS = 9_000_000_000L;

    final ManualTime time = new ManualTime();
    final SnapshotRegistry snapshotRegistry = snapshotRegistry();
    final FeatureControlManager featureControl;
    final ClusterControlManager clusterControl;
    final ConfigurationControlManager configurationControl;
    final ReplicationControlManager replicationControl;
    final String clusterId;
    final boolean elr;
    final Map<Integer, Uuid> logDirs = new HashMap<>();
    private long nextOffset = 0;
    private Uuid topicId;
    private int partitions = 1;
    // The stated mapping between the model's broker epochs and Kafka's (record offsets): a
    // bijection fixed at each registration. An epoch no registration produced maps to a value
    // above any offset, distinct per value, so it equals no registered epoch, as in the model.
    private final Map<Long, Long> toKafka = new HashMap<>();
    private final Map<Long, Long> toModel = new HashMap<>();
    private long unknownEpochs = 1L << 50;
    private String mappingConflict = null;
    private final List<String> written = new ArrayList<>();
    // Every record replayed, in order from offset 0: the metadata log a standby replays (OracleProbes)
    private final List<ApiMessageAndVersion> log = new ArrayList<>();
    private int incarnations = 0;

    /** The managers, none of them active yet (a standby controller's). */
    private OracleCluster(String clusterId, boolean elr) {
        this.clusterId = clusterId;
        this.elr = elr;
        featureControl = OracleManagers.featureControl(snapshotRegistry);
        ReplicationControlManager[] rcm = new ReplicationControlManager[1];
        clusterControl = OracleManagers.clusterControl(clusterId, time, snapshotRegistry, SESSION_TIMEOUT_NS,
            featureControl, rcm);
        configurationControl = OracleManagers.configurationControl(snapshotRegistry, featureControl);
        replicationControl = OracleManagers.replicationControl(snapshotRegistry, configurationControl,
            clusterControl, featureControl, elr);
        rcm[0] = replicationControl;
    }

    @SuppressWarnings("unchecked")
    OracleCluster(Map<String, Object> init) {
        this(Uuid.randomUuid().toString(), bool(init, "elr"));
        replay(OracleManagers.bootstrapFeatures(elr, bool(init, "isr_shrink_bumps_leader_epoch")));
        clusterControl.activate();

        // Every broker registers (a first registration, version 3) and heartbeats until unfenced.
        List<Integer> brokers = ints(init.get("brokers"));
        Map<String, Object> epochs = (Map<String, Object>) init.get("epochs");
        for (int b : brokers) {
            String error = register(b, -1L, ((Number) epochs.get(Integer.toString(b))).longValue(), true, true);
            if (error != null) throw new IllegalStateException("initial registration of " + b + ": " + error);
            error = heartbeat(b, false, false);
            if (error != null) throw new IllegalStateException("initial heartbeat of " + b + ": " + error);
        }
        if (init.get("partitions") != null) partitions = integer(init, "partitions");
        createTopic(ints(init.get("replicas")), ((Number) init.get("min_isr")).intValue(), bool(init, "unclean"));
        Map<String, Object> partition = (Map<String, Object>) init.get("partition");
        if (partition != null) overridePartition(partition, 0);
        Map<String, Object> overrides = (Map<String, Object>) init.getOrDefault("overrides", Map.of());
        for (Map.Entry<String, Object> e : overrides.entrySet()) {
            overridePartition((Map<String, Object>) e.getValue(), Integer.parseInt(e.getKey()));
        }
        for (int b : ints(init.getOrDefault("fenced", List.of()))) {
            setRegistration(b, true, null);
        }
        for (int b : ints(init.getOrDefault("shutting_down", List.of()))) {
            setRegistration(b, null, true);
        }
        written.clear();
    }

    /** A standby controller of this one's cluster: its managers never activated, the whole
     * metadata log replayed into them at the same offsets (as a standby follows the log), the
     * model's epochs read as this one's (`dropLast`: all but the last record, for the driver's
     * own test). */
    static OracleCluster standby(OracleCluster active, boolean dropLast) {
        OracleCluster standby = new OracleCluster(active.clusterId, active.elr);
        standby.replay(active.log.subList(0, active.log.size() - (dropLast ? 1 : 0)));
        standby.written.clear();
        standby.topicId = active.topicId;
        standby.partitions = active.partitions;
        standby.toKafka.putAll(active.toKafka);
        standby.toModel.putAll(active.toModel);
        standby.mappingConflict = active.mappingConflict;
        return standby;
    }

    // ------------------------------------------------------------------ records

    void replay(List<ApiMessageAndVersion> records) {
        for (ApiMessageAndVersion record : records) {
            ApiMessage message = record.message();
            OracleManagers.replay(this, message, nextOffset);
            written.add(message.getClass().getSimpleName());
            log.add(record);
            nextOffset++;
        }
    }

    Uuid topicId() {
        return topicId;
    }

    long lastOffset() {
        return nextOffset - 1;
    }

    // ------------------------------------------------------------------ requests

    /** The Kafka epoch for a model epoch (see toKafka). */
    long kafkaEpoch(long modelEpoch) {
        if (modelEpoch == -1L) return -1L;
        Long k = toKafka.get(modelEpoch);
        if (k == null) {
            k = unknownEpochs++;
            toKafka.put(modelEpoch, k);
        }
        return k;
    }

    private void bind(long modelEpoch, long kafkaEpoch) {
        Long k = toKafka.get(modelEpoch);
        Long m = toModel.get(kafkaEpoch);
        if ((k != null && k != kafkaEpoch && k < (1L << 50)) || (m != null && m != modelEpoch)) {
            mappingConflict = "model epoch " + modelEpoch + " and Kafka epoch " + kafkaEpoch +
                " cannot both be bound (" + k + ", " + m + ")";
            return;
        }
        toKafka.put(modelEpoch, kafkaEpoch);
        toModel.put(kafkaEpoch, modelEpoch);
    }

    /** BrokerRegistration from a new incarnation of b; `previousEpoch` (a model epoch) from its
     * clean-shutdown file; `modelEpoch` is the epoch the model gives the new incarnation. */
    String register(int broker, long previousEpoch, long modelEpoch, boolean cleanShutdownDetection, boolean lapse) {
        BrokerRegistration existing = clusterControl.brokerRegistrations().get(broker);
        if (existing != null && lapse) {
            // The old incarnation stopped heartbeating: its session has lapsed (a registration
            // while it is valid is refused with DUPLICATE_BROKER_REGISTRATION).
            OracleManagers.expireSession(clusterControl, broker, existing.epoch(), time, SESSION_TIMEOUT_NS);
        }
        Uuid dir = logDirs.computeIfAbsent(broker, b -> Uuid.randomUuid());
        BrokerRegistrationRequestData request = registration(broker, new Uuid(broker + 1L, ++incarnations),
            kafkaEpoch(previousEpoch), dir);
        try {
            ControllerResult<?> result = OracleManagers.registerBroker(clusterControl, featureControl, request,
                nextOffset, cleanShutdownDetection);
            replay(result.records());
            bind(modelEpoch, clusterControl.brokerRegistrations().get(broker).epoch());
            return null;
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    /** The BrokerRegistration request of this cluster for `broker`: no rack, one log directory,
     * the features the driver finalizes (OracleProbes changes one field of it at a time). */
    BrokerRegistrationRequestData registration(int broker, Uuid incarnation, long previousEpoch, Uuid dir) {
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData().
            setBrokerId(broker).
            setClusterId(clusterId).
            setIncarnationId(incarnation).
            setRack(null).
            setPreviousBrokerEpoch(previousEpoch).
            setLogDirs(List.of(dir));
        OracleManagers.addFeatures(request, elr);
        return request;
    }

    /** A heartbeat from b's current incarnation, caught up with the metadata log. */
    String heartbeat(int broker, boolean wantFence, boolean wantShutDown) {
        return heartbeat(broker, wantFence, wantShutDown, lastOffset());
    }

    /** A heartbeat from b's current incarnation at metadata offset `offset`. */
    String heartbeat(int broker, boolean wantFence, boolean wantShutDown, long offset) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(broker);
        long epoch = registration == null ? -1L : registration.epoch();
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData().
            setBrokerId(broker).
            setBrokerEpoch(epoch).
            setCurrentMetadataOffset(offset).
            setWantFence(wantFence).
            setWantShutDown(wantShutDown);
        try {
            clusterControl.checkBrokerEpoch(broker, epoch);
            BrokerHeartbeatManager heartbeats = clusterControl.heartbeatManager();
            if (wantShutDown && heartbeats.controlledShutdownOffset(broker).isPresent()) caughtUp(broker);
            OracleManagers.trackHeartbeat(clusterControl, broker, epoch);
            long registerOffset = clusterControl.registerBrokerRecordOffset(broker).orElse(Long.MAX_VALUE);
            ControllerResult<BrokerHeartbeatReply> result = replicationControl.processBrokerHeartbeat(request,
                registerOffset);
            replay(result.records());
            // QuorumController's heartbeat event, once its batch is written: a broker it put in
            // controlled shutdown waits until every active broker has read that far
            if (result.response().inControlledShutdown()) {
                heartbeats.maybeUpdateControlledShutdownOffset(broker, lastOffset());
            }
            return null;
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    /** Every other unfenced broker not shutting down heartbeats at the log's end, as each does
     * every broker.heartbeat.interval.ms: the model's clean_shutdown is the heartbeat after that
     * wait (BrokerHeartbeatManager grants the shutdown once the lowest active broker's offset has
     * reached the broker's controlled-shutdown offset; the time it takes is not modelled). */
    private void caughtUp(int shuttingDown) {
        BrokerHeartbeatManager heartbeats = clusterControl.heartbeatManager();
        for (BrokerRegistration r : new ArrayList<>(clusterControl.brokerRegistrations().values())) {
            if (r.id() != shuttingDown && !r.fenced() && heartbeats.controlledShutdownOffset(r.id()).isEmpty()) {
                String error = heartbeat(r.id(), false, false);
                if (error != null) throw new IllegalStateException("broker " + r.id() + "'s heartbeat: " + error);
            }
        }
    }

    /** b's session lapses (it stopped heartbeating, or is cut off from the controller) and the
     * controller's stale-broker task fences it. */
    String expire(int broker) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(broker);
        if (registration == null) return null;
        OracleManagers.expireSession(clusterControl, broker, registration.epoch(), time, SESSION_TIMEOUT_NS);
        OracleManagers.fenceStaleBrokers(replicationControl, this);
        return null;
    }

    String alterPartition(Map<String, Object> op) {
        AlterPartitionRequestData.PartitionData data = new AlterPartitionRequestData.PartitionData().
            setPartitionIndex(partitionOf(op)).
            setLeaderEpoch(integer(op, "leader_epoch")).
            setPartitionEpoch(integer(op, "partition_epoch")).
            setLeaderRecoveryState((byte) integer(op, "recovery"));
        List<AlterPartitionRequestData.BrokerState> isr = new ArrayList<>();
        for (Object member : (List<?>) op.get("isr")) {
            List<?> pair = (List<?>) member;
            isr.add(new AlterPartitionRequestData.BrokerState().
                setBrokerId(((Number) pair.get(0)).intValue()).
                setBrokerEpoch(kafkaEpoch(((Number) pair.get(1)).longValue())));
        }
        data.setNewIsrWithEpochs(isr);
        AlterPartitionRequestData request = new AlterPartitionRequestData().
            setBrokerId(integer(op, "broker")).
            setBrokerEpoch(kafkaEpoch(((Number) op.get("broker_epoch")).longValue()));
        AlterPartitionRequestData.TopicData topicData = new AlterPartitionRequestData.TopicData().setTopicId(topicId);
        topicData.partitions().add(data);
        request.topics().add(topicData);
        try {
            ControllerResult<AlterPartitionResponseData> result = replicationControl.alterPartition(
                context(ApiKeys.ALTER_PARTITION, (short) integer(op, "version")), request);
            replay(result.records());
            return code(result.response().topics().get(0).partitions().get(0).errorCode());
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    /** An ElectLeaders of `topic`'s `partition`, or (topic null) of every partition: the first
     * error its answer lists (ELECTION_NOT_NEEDED is left out of an answer for every partition). */
    String elect(String type, String topic, int partition) {
        ElectLeadersRequestData request = new ElectLeadersRequestData().
            setElectionType((byte) (type.equals("unclean") ? 1 : 0));
        if (topic == null) {
            request.setTopicPartitions(null);
        } else {
            ElectLeadersRequestData.TopicPartitions tp = new ElectLeadersRequestData.TopicPartitions().setTopic(topic);
            tp.partitions().add(partition);
            request.topicPartitions().add(tp);
        }
        try {
            ControllerResult<ElectLeadersResponseData> result = replicationControl.electLeaders(request);
            replay(result.records());
            for (ElectLeadersResponseData.ReplicaElectionResult r : result.response().replicaElectionResults()) {
                for (ElectLeadersResponseData.PartitionResult pr : r.partitionResult()) {
                    String error = code(pr.errorCode());
                    if (error != null) return error;
                }
            }
            return null;
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    String alterConfig(String name, String value) {
        Map<String, Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>> ops = new HashMap<>();
        ops.put(name, new SimpleImmutableEntry<>(value == null
            ? org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE
            : org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET, value));
        Map<ConfigResource, Map<String, Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>> changes =
            new HashMap<>();
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
        changes.put(resource, ops);
        try {
            ControllerResult<Map<ConfigResource, ApiError>> result =
                OracleCompat.incrementalAlterConfigs(configurationControl, changes);
            ApiError error = result.response().get(resource);
            if (error != null && error.isFailure()) return error.error().name();
            replay(result.records());
            return null;
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    /** A reassignment of `topicName`'s `partition` to `replicas`, or (null) its cancellation. */
    String reassign(String topicName, List<Integer> replicas, int partition) {
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData();
        AlterPartitionReassignmentsRequestData.ReassignableTopic topic =
            new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(topicName);
        topic.partitions().add(new AlterPartitionReassignmentsRequestData.ReassignablePartition().
            setPartitionIndex(partition).setReplicas(replicas));
        request.topics().add(topic);
        try {
            ControllerResult<AlterPartitionReassignmentsResponseData> result =
                replicationControl.alterPartitionReassignments(request);
            replay(result.records());
            return code(result.response().responses().get(0).partitions().get(0).errorCode());
        } catch (RuntimeException e) {
            return errorName(e);
        }
    }

    String periodicUncleanElection() {
        replay(replicationControl.maybeElectUncleanLeaders().records());
        return null;
    }

    String periodicPreferredElection() {
        replay(replicationControl.maybeBalancePartitionLeaders().records());
        return null;
    }

    Map<String, Object> apply(Map<String, Object> op) {
        written.clear();
        String kind = (String) op.get("op");
        String error;
        switch (kind) {
            case "noop": error = null; break;
            case "register": error = register(integer(op, "broker"), ((Number) op.get("previous_epoch")).longValue(),
                ((Number) op.get("epoch")).longValue(), bool(op, "clean_detection"),
                !Boolean.FALSE.equals(op.get("lapse"))); break;
            case "heartbeat": error = heartbeat(integer(op, "broker"), bool(op, "want_fence"),
                bool(op, "want_shutdown")); break;
            case "expire": error = expire(integer(op, "broker")); break;
            case "alter_partition": error = alterPartition(op); break;
            case "elect": error = elect((String) op.get("type"), TOPIC, partitionOf(op)); break;
            case "config": error = alterConfig((String) op.get("name"), (String) op.get("value")); break;
            case "reassign": error = reassign(TOPIC, ints(op.get("replicas")), partitionOf(op)); break;
            case "periodic_unclean": error = periodicUncleanElection(); break;
            case "periodic_preferred": error = periodicPreferredElection(); break;
            case "probe": error = OracleProbes.probe(this, (String) op.get("kind")); break;
            default: throw new IllegalArgumentException("unknown op " + kind);
        }
        return dump(error);
    }

    // ------------------------------------------------------------------ setup

    private void createTopic(List<Integer> replicas, int minIsr, boolean unclean) {
        CreateTopicsResponseData.CreatableTopicResult created = createTopic(TOPIC, partitions, replicas,
            Map.of(MIN_ISR, Integer.toString(minIsr), UNCLEAN, Boolean.toString(unclean)));
        if (created.errorCode() != 0) {
            throw new IllegalStateException("CreateTopics: " + Errors.forCode(created.errorCode()) + " " +
                created.errorMessage());
        }
        topicId = created.topicId();
    }

    /** CreateTopics of one topic, `partitions` partitions each on `replicas`, with `configs`,
     * its records replayed: the controller's answer for it. */
    CreateTopicsResponseData.CreatableTopicResult createTopic(String name, int partitions, List<Integer> replicas,
                                                             Map<String, String> configs) {
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().
            setName(name).setNumPartitions(-1).setReplicationFactor((short) -1);
        for (int i = 0; i < partitions; i++) {
            topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().
                setPartitionIndex(i).setBrokerIds(replicas));
        }
        for (Map.Entry<String, String> config : new TreeMap<>(configs).entrySet()) {
            topic.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().
                setName(config.getKey()).setValue(config.getValue()));
        }
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        request.topics().add(topic);
        ControllerResult<CreateTopicsResponseData> result = OracleCompat.createTopics(replicationControl,
            context(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.latestVersion()), request);
        replay(result.records());
        return result.response().topics().find(name);
    }

    /** A scenario that starts from another partition state: the record a snapshot would hold. */
    private void overridePartition(Map<String, Object> p, int index) {
        PartitionRegistration current = replicationControl.getPartition(topicId, index);
        List<Integer> replicas = ints(p.get("replicas"));
        List<Uuid> dirs = new ArrayList<>();
        for (int r : replicas) {      // a replica the created topic lacks (one being added) has no directory yet
            boolean had = false;
            for (int c : current.replicas) had |= c == r;
            Uuid dir = had ? current.directory(r) : Uuid.ZERO_UUID;
            dirs.add(dir.equals(Uuid.ZERO_UUID) ? logDirs.getOrDefault(r, Uuid.ZERO_UUID) : dir);
        }
        PartitionRecord record = new PartitionRecord().
            setTopicId(topicId).setPartitionId(index).
            setReplicas(replicas).
            setDirectories(metadataVersion().isDirectoryAssignmentSupported() ? dirs : null).
            setIsr(ints(p.get("isr"))).
            setEligibleLeaderReplicas(ints(p.get("elr"))).
            setLastKnownElr(ints(p.get("last_known_elr"))).
            setAddingReplicas(ints(p.get("adding"))).
            setRemovingReplicas(ints(p.get("removing"))).
            setLeader(integer(p, "leader")).
            setLeaderEpoch(integer(p, "leader_epoch")).
            setPartitionEpoch(integer(p, "partition_epoch")).
            setLeaderRecoveryState((byte) integer(p, "recovery"));
        replay(List.of(new ApiMessageAndVersion(record, (short) 2)));
    }

    private void setRegistration(int broker, Boolean fenced, Boolean shuttingDown) {
        BrokerRegistration r = clusterControl.brokerRegistrations().get(broker);
        BrokerRegistrationChangeRecord change = new BrokerRegistrationChangeRecord().
            setBrokerId(broker).setBrokerEpoch(r.epoch());
        if (fenced != null) change.setFenced((byte) (fenced ? 1 : -1));
        if (shuttingDown != null) change.setInControlledShutdown((byte) (shuttingDown ? 1 : 0));
        replay(List.of(new ApiMessageAndVersion(change, (short) 1)));
        if (Boolean.TRUE.equals(fenced)) {
            OracleManagers.forgetSession(clusterControl, broker);
        }
    }

    // ------------------------------------------------------------------ the state report

    Map<String, Object> dump(String error) {
        Map<String, Object> state = new LinkedHashMap<>();
        if (partitions == 1) {
            state.put("partition", partition(0));
        } else {
            Map<String, Object> each = new LinkedHashMap<>();
            for (int i = 0; i < partitions; i++) each.put(Integer.toString(i), partition(i));
            state.put("partitions", each);
        }
        Map<String, Object> brokers = new TreeMap<>();
        for (BrokerRegistration r : clusterControl.brokerRegistrations().values()) {
            Long model = toModel.get(r.epoch());
            List<Object> row = new ArrayList<>();
            row.add(model);
            row.add(r.fenced());
            row.add(r.inControlledShutdown());
            row.add(r.epoch());
            brokers.put(Integer.toString(r.id()), row);
        }
        state.put("brokers", brokers);
        if (partitions == 1) {
            state.put("elr_index", elrIndex(0));
        } else {
            Map<String, Object> each = new LinkedHashMap<>();
            for (int i = 0; i < partitions; i++) each.put(Integer.toString(i), elrIndex(i));
            state.put("elr_index", each);
        }
        state.put("min_isr", configurationControl.getTopicConfig(TOPIC, MIN_ISR).value());
        state.put("unclean", configurationControl.uncleanLeaderElectionEnabledForTopic(TOPIC));
        state.put("error", error);
        state.put("records", new ArrayList<>(written));
        if (mappingConflict != null) state.put("epoch_mapping", mappingConflict);
        return state;
    }

    private Map<String, Object> partition(int index) {
        PartitionRegistration p = replicationControl.getPartition(topicId, index);
        Map<String, Object> part = new LinkedHashMap<>();
        part.put("replicas", p.replicas);
        part.put("isr", p.isr);
        part.put("elr", p.elr);
        part.put("last_known_elr", p.lastKnownElr);
        part.put("leader", p.leader);
        part.put("leader_epoch", p.leaderEpoch);
        part.put("partition_epoch", p.partitionEpoch);
        part.put("recovery", p.leaderRecoveryState == LeaderRecoveryState.RECOVERING ? 1 : 0);
        part.put("adding", p.addingReplicas);
        part.put("removing", p.removingReplicas);
        return part;
    }

    /** The controller's ELR index (BrokersToElrs): how many entries list this partition, per broker. */
    private Map<String, Object> elrIndex(int partition) {
        Map<String, Object> index = new TreeMap<>();
        for (BrokerRegistration r : clusterControl.brokerRegistrations().values()) {
            int entries = 0;
            Iterator<TopicIdPartition> it = replicationControl.brokersToElrs().partitionsWithBrokerInElr(r.id());
            while (it.hasNext()) {
                TopicIdPartition tp = it.next();
                if (tp.topicId().equals(topicId) && tp.partitionId() == partition) entries++;
            }
            if (entries > 0) index.put(Integer.toString(r.id()), entries);
        }
        return index;
    }

    /** The partition an op names (0 when it names none). */
    private int partitionOf(Map<String, Object> op) {
        int p = op.get("partition") == null ? 0 : integer(op, "partition");
        if (p < 0 || p >= partitions) throw new IllegalArgumentException("no partition " + p);
        return p;
    }

    // ------------------------------------------------------------------ helpers

    /** A SnapshotRegistry with a LogContext, a class Kafka 4.4 moved to another package. */
    static SnapshotRegistry snapshotRegistry() {
        for (String name : List.of("org.apache.kafka.common.utils.LogContext",
                                   "org.apache.kafka.common.utils.internals.LogContext")) {
            try {
                Class<?> logContext = Class.forName(name);
                return SnapshotRegistry.class.getConstructor(logContext).
                    newInstance(logContext.getConstructor().newInstance());
            } catch (ClassNotFoundException e) {
                // the other package
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot build a SnapshotRegistry", e);
            }
        }
        throw new IllegalStateException("no LogContext class in this Kafka release");
    }

    /** The Kafka version of the jars on the classpath (kafka-clients' own version file). */
    static String kafkaVersion() {
        try (java.io.InputStream in = OracleCluster.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            java.util.Properties props = new java.util.Properties();
            if (in != null) props.load(in);
            return props.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    MetadataVersion metadataVersion() {
        return MetadataVersion.fromFeatureLevel(featureControl.finalizedFeatures(Long.MAX_VALUE).
            versionOrDefault(MetadataVersion.FEATURE_NAME, (short) 0));
    }

    static ControllerRequestContext context(ApiKeys api, short version) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(api.id).
            setRequestApiVersion(version), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    static String errorName(RuntimeException e) {
        Errors error = Errors.forException(e);
        return error == Errors.UNKNOWN_SERVER_ERROR ? "UNKNOWN_SERVER_ERROR(" + e + ")" : error.name();
    }

    static String code(short code) {
        Errors error = Errors.forCode(code);
        return error == Errors.NONE ? null : error.name();
    }

    static int integer(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Number)) throw new IllegalArgumentException("field '" + key + "' must be an integer");
        return ((Number) v).intValue();
    }

    static boolean bool(Map<String, Object> m, String key) {
        return Boolean.TRUE.equals(m.get(key));
    }

    static List<Integer> ints(Object v) {
        List<Integer> out = new ArrayList<>();
        if (v == null) return out;
        for (Object x : (List<?>) v) out.add(((Number) x).intValue());
        return out;
    }
}
