"""Entry point for spark-submit, which takes a Python file rather than a console script:

    spark-submit --master spark://HOST:7077 verifier/cli/submit.py spark-check --brokers 4 --checkpoint-dir DIR

The session then uses spark-submit's master and settings (spark-check's --master is ignored)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from verifier.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
