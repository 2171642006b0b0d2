"""Engines that check the model against something outside it (docs/architecture: verifier/engines)."""
