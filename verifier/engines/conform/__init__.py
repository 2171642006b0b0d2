"""The conform engine (docs/conform.md): oracle.py builds and runs the driver of Kafka's own
controller classes (oracle/), engine.py compares one trace and shrinks a divergence, run.py
runs scenario files and seeded walks, compare.py compares two views field by field."""
