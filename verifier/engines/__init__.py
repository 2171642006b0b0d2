"""Engines that run the model beside something else: `conform` runs it beside a Kafka release's
own controller code (docs/conform.md)."""
