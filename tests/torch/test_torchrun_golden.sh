#!/bin/bash
# esv-run's command line against torch's own torchrun parser
# (torchrun_golden.py): every option, spelling, PET_* variable and default.
TEST_NAME=test_torchrun_golden
. "$(dirname "$0")/common.sh"
"$TORCH_PY" "$TORCH_DIR/torchrun_golden.py" "$ESV_BIN_DIR/esv-run" ||
    fail "esv-run's command line differs from torchrun's"
finish
