"""A Kafka log directory's layout and files: segments found in offset order across the layouts brokers and
tiered storage leave (:mod:`.layout`), the other files read by Kafka's own rules (:mod:`.files`: indexes,
checkpoints, snapshots, metadata), the checks across them (:mod:`.checks`) and the sparse indexes rebuilt
from a segment (:mod:`.indexes`).

May import: kfmt.runtime, kfmt.codec, kfmt.storage, kfmt.payloads (never kfmt.log, kfmt.table, the tools or
Spark): what a folder holds is decided here, before anything reads a log."""
