#!/bin/sh
# run-3w.sh again, the build after first in each round (an order check), rounds 5-8.
ROUNDS="5 6 7 8" ORDER="after before" exec sh "$(dirname "$0")/run-3w.sh"
