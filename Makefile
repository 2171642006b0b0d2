# Two entry points (see README): `make check` sets up and runs the default model check;
# `make test` sets up and runs the test suite. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: check test test-fast nightly hadoop spark-package oracle cluster-dist conform cluster-walks replay mutants prove prove-recovery matrix matrix-extended availability spark-check bench venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e .
	touch $(STAMP)

venv: $(STAMP)

check: $(STAMP)
	$(BIN)/kraft-verify check

# The conform engine's driver of Kafka's controller, built once per release against its jars
# from Maven Central (oracle/, docs/conform.md). `make test` builds it first: a machine that
# cannot reach Maven Central fails here with one line, never with a test suite that skipped.
oracle: $(STAMP)
	$(BIN)/python -m verifier.engines.conform.oracle

# The real clusters of cluster-conform (docs/cluster.md): each release's broker from Maven Central
# (org.apache.kafka:kafka_2.13 with a log binding) and kraft-verify's metadata tail, built once per
# release under oracle/cluster/target/. CI runs real 3.9.2 and 4.4.0 clusters; the nightly walks
# use 4.0.2 too. It fails with one line when Maven Central is out of reach.
CLUSTER_RELEASES ?= 3.9.2 4.0.2 4.4.0
cluster-dist: $(STAMP)
	$(BIN)/python -m verifier.engines.cluster.dist $(CLUSTER_RELEASES)

# Test processes (pytest-xdist): a test module that starts a cluster or a server is one xdist
# group, run whole on one process (pytest stays at 9.1: 9.2 breaks the grouping,
# tests/test_test_groups.py). make test-fast's tests use a core each: two processes for the two
# cores. CI's (make test) run three: its JVM tests mostly wait on clusters, Spark and timeouts
# (a run of them alone kept 0.47 of the two cores busy), and the third process runs the others
# in that wait. The 30 slowest tests are listed, so CI's log says where its time goes.
TEST_WORKERS ?= 2
CI_WORKERS ?= 3
test: $(STAMP) oracle cluster-dist hadoop
	$(BIN)/python -m pytest -n $(CI_WORKERS) --dist loadgroup --durations=30

# The tier a developer runs before a commit, in under 5 minutes with nothing to build first:
# every test that needs no JVM, Maven, Spark, Hadoop, Chromium or root (tests/conftest.py marks
# the others `deps`), less the `slow` cases: the long equivalence runs and gate cases (an
# interpreted reference, a Hypothesis or z3 gate on one more mutant or a larger cluster, a
# SIGKILL-and-resume), each the heavier twin of a case the tier keeps or a sweep of the whole
# model. `make test` (CI) runs every tier; tests/test_test_groups.py holds what this leaves out.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m 'not nightly and not deps and not slow' --durations=30

# The tests too slow for CI (the Spark cluster's fault cases: a worker killed mid-level, the
# driver killed and resumed from HDFS, a DataNode restarted; the cluster runs with an HDFS
# checkpoint of the default config, a violating preset and 4 brokers to depth 12; spark-submit
# of the packed project; Ctrl-C of a Spark run (CI sends SIGTERM); the 5-broker fuzz mutation
# gate; minutes each), and the heavier twins of cases CI keeps (Spark's shuffle on every
# variant, conform's seeded walks on every release, F3 kept on a real 4.4.0 cluster:
# BENCHMARKS.md, "Test tiers").
nightly: $(STAMP) hadoop cluster-dist
	$(BIN)/python -m pytest -m nightly
	$(MAKE) cluster-walks

# Apache Hadoop's NameNode and DataNode (hadoop-client-minicluster, the version of pyspark's
# Hadoop client) from Maven Central, for the namespace cluster's HDFS (spark/cluster.py).
hadoop: $(STAMP)
	$(BIN)/python -m spark.cluster fetch

# The project packed for spark-submit --archives (spark/package.py; README, "On a cluster").
spark-package: $(STAMP)
	$(BIN)/python -m spark.package build build/spark/kraft-verify-env.tar.gz

# The nightly real-cluster walks (docs/cluster.md): seeded walks on real 4.4.0 and 3.9.2 clusters
# until 300 steps each were compared, with the cost figures of BENCHMARKS.md ("Real clusters");
# about 30 minutes per release; then walks on a topic of two partitions until 100 steps each. Then the rule-flip gate: every broker-side rule flipped, its case
# acted out on a real cluster of each release (BENCHMARKS.md, "The rule-flip gate"; about 15
# minutes). Exit 1 on a divergence of the walks, or a flip a real cluster does not tell apart.
cluster-walks: $(STAMP) cluster-dist
	$(BIN)/python bench/cluster_bench.py --releases 4.4.0,3.9.2 --steps 300 --json bench/results/cluster.json
	$(BIN)/python bench/cluster_bench.py --releases 4.4.0,3.9.2 --partitions 2 --steps 100 --json bench/results/cluster-partitions.json
	$(BIN)/python bench/ruleflip_bench.py --releases 4.4.0,3.9.2 --json bench/results/ruleflip.json

# Every release against its own controller code at the full budgets: the scenario files that
# apply and 100,000 walk steps over each walk set per release (10,000 of two-partitions; 3.9.2 also its
# ELR at metadata 4.0-IV0, unstable-elr), the controller's
# classes under JaCoCo (the branches the comparisons reach, and why the others are not); about
# 25 minutes here (22:33 with the ten sets, 2026-12-07 22:26, at c531167). The table goes to bench/results/conform.json, BENCHMARKS.md has the figures.
# Exit 1 on a divergence.
conform: $(STAMP) oracle
	$(BIN)/python bench/conform_bench.py --steps 100000 --json bench/results/conform.json

replay: $(STAMP)
	$(BIN)/kraft-verify replay specs/scenarios/*.json

mutants: $(STAMP)
	$(BIN)/kraft-verify mutants

# The z3 proofs for N up to 8, a verdict per property (about 3 minutes). It exits 1 on Kafka's
# own rules: LeaderCandidateCompleteness is refuted by FINDINGS.md F6 and
# UncleanElectionOnlyAfterMinIsrUncleanShutdowns by F1, each named in the output with the
# `check` command that shows it; the structural ELR invariants are proved.
prove: $(STAMP)
	$(BIN)/kraft-verify prove

# The z3 proofs with KIP-966 recovery rounds, one run per strategy (about a minute each).
prove-recovery: $(STAMP)
	for s in aggressive balanced none; do \
	  $(BIN)/kraft-verify prove --preset recovery --flag unclean_recovery_strategy=$$s || exit $$?; done

# The availability table of docs/availability.md (500 seeded runs per variant, seconds).
availability: $(STAMP)
	$(BIN)/kraft-verify availability

# The overnight default: 4 brokers, 2 records, 2 fences, partition epochs up to 7 (2 ISR shrinks,
# the default): 1,024,833,923 states, depth 36, which spark-check exhausts with its checkpoint
# on HDFS on this machine's disk in about 1:15-1:40 (BENCHMARKS.md, "The store on HDFS, against
# `check`"; `check --visited disk` exhausts it too). Its checkpoint takes about 32 bytes a
# state (every level's links with a parent's low lane, the rows of the last two levels that
# kept them) and its run needs more again in level blocks and visited runs beside it: at most
# 71 GB of this disk above its start with the store on the same disk (the run stops 2 GB short
# of a full disk, resumable), so keep about 80 GB free, or put the checkpoint on HDFS elsewhere
# (SPARK_CHECKPOINT=hdfs://...; `python -m spark.cluster hdfs 1` starts one on this machine).
# Rows every 1800 s, not check's 300: the widest levels (about 110 million states) take 8-10
# minutes each, so 300 would keep the rows of the two widest, 11 GB more at the disk's peak;
# a resume then goes back at most about half an hour. Rerun the same command after a crash
# and it resumes from the last level with rows.
# (Earlier defaults: --bound isr_shrinks=1 without the epoch bound, 397,676,487 states;
# --bound isr_shrinks=3 without fences=2, 278,821,666; --bound records=2, 125,726,174.)
# On a cluster: SPARK_MASTER=spark://HOST:7077 SPARK_CHECKPOINT=hdfs://NAMENODE/kv/ck; a URL's
# manifest cannot be looked at from here, so add RESUME=--resume to continue a run there.
# local[*,4]: a task that fails is retried (up to 4 attempts), as a cluster would; plain
# local[*] fails the whole level on one failure. On a local master the executors run in the
# driver's JVM: Spark's 1g heap ran out reading a level of 4.5 million states (the third
# overnight run's levels 18-19: java.lang.OutOfMemoryError), so the overnight run gives it 6g.
# 16 partitions: an owner's task holds its share of a level's successors and of its new rows
# in its Python worker; at 4 the kernel's OOM killer took a worker and then the JVM on this
# 23 GB machine (levels of 35 million states), and a resume read part files of 850 MB whole
# into the JVM's heap; 8 held a worker of 7.9 GB at levels of 36 million, and 16 halve that.
SPARK_MASTER ?= local[*,4]
SPARK_DRIVER_MEMORY ?= 6g
SPARK_CHECKPOINT ?= reports/spark-checkpoint
SPARK_PARTITIONS ?= 16
SPARK_CHECKPOINT_EVERY ?= 1800
RESUME ?= $(shell test -f '$(SPARK_CHECKPOINT)/manifest.json' && echo --resume)
spark-check: $(STAMP)
	$(BIN)/kraft-verify spark-check --master '$(SPARK_MASTER)' --driver-memory $(SPARK_DRIVER_MEMORY) \
	    --partitions $(SPARK_PARTITIONS) --brokers 4 --bound records=2 --bound fences=2 --bound max_partition_epoch=7 \
	    --checkpoint-dir '$(SPARK_CHECKPOINT)' --checkpoint-every $(SPARK_CHECKPOINT_EVERY) $(RESUME)

bench: $(STAMP)
	$(BIN)/python bench/bfs_bench.py --runs 2 --json bench/results/bfs.json
	$(BIN)/python bench/scale_bench.py --json bench/results/scale.json
	$(BIN)/python bench/estimate_bench.py --json bench/results/estimate.json
	$(BIN)/python bench/prove_bench.py --max-brokers 8 --depth 4 --json bench/results/prove.json
	$(BIN)/python bench/spark_bench.py --only overhead --only visited --only main --only large --json bench/results/spark.json

clean:
	rm -rf $(VENV) build *.egg-info

# Every preset against every property under the default bound sets (default, recovery, config,
# min-isr-above-rf; minutes; docs/FINDINGS.md); rows whose config and model did not change are
# reused from reports/matrix/matrix.json. The matrix exits 1 when a cell is violated, which the
# older variants always are: that is its result, not a failure of the target; 2 and 3 are.
matrix: $(STAMP)
	$(BIN)/kraft-verify matrix || [ $$? -eq 1 ]

# The same with the extended bound sets (admin elections + config changes, a reassignment):
# hours, not minutes; a row that does not finish within its budget says "not reached".
matrix-extended: $(STAMP)
	$(BIN)/kraft-verify matrix --bound-sets default,recovery,config,min-isr-above-rf,admin+config,reassignment \
	    --row-budget 1800 || [ $$? -eq 1 ]
