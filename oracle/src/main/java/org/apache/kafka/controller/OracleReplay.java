/*
 * kraft-verify's oracle: QuorumController.replay's dispatch, for the record types the driver
 * produces (ClearElrRecord apart: 3.9 has none, so each generation replays it or not).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.FenceBrokerRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.metadata.UnfenceBrokerRecord;
import org.apache.kafka.common.metadata.UnregisterBrokerRecord;
import org.apache.kafka.common.protocol.ApiMessage;

final class OracleReplay {
    private OracleReplay() {
    }

    /** Replays `message` into the manager QuorumController gives it to; false if it is not one
     * of the types handled here. */
    static boolean replay(OracleCluster c, ApiMessage message, long offset) {
        if (message instanceof RegisterBrokerRecord) c.clusterControl.replay((RegisterBrokerRecord) message, offset);
        else if (message instanceof UnregisterBrokerRecord) c.clusterControl.replay((UnregisterBrokerRecord) message);
        else if (message instanceof BrokerRegistrationChangeRecord) {
            c.clusterControl.replay((BrokerRegistrationChangeRecord) message);
        } else if (message instanceof FenceBrokerRecord) c.clusterControl.replay((FenceBrokerRecord) message);
        else if (message instanceof UnfenceBrokerRecord) c.clusterControl.replay((UnfenceBrokerRecord) message);
        else if (message instanceof TopicRecord) c.replicationControl.replay((TopicRecord) message);
        else if (message instanceof PartitionRecord) c.replicationControl.replay((PartitionRecord) message);
        else if (message instanceof PartitionChangeRecord) c.replicationControl.replay((PartitionChangeRecord) message);
        else if (message instanceof ConfigRecord) c.configurationControl.replay((ConfigRecord) message);
        else if (message instanceof FeatureLevelRecord) c.featureControl.replay((FeatureLevelRecord) message);
        else return false;
        return true;
    }
}
