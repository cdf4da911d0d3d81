"""One log's bytes: the one scan loop every reader takes its entries and damage from (:mod:`.scanner`, with
:mod:`.resync` finding the next good entry after damage), batches read from bytes, a path or a file
(:mod:`.batches`: ``read_batches``, ``scan``), transactions resolved (:mod:`.txn`), rows as Arrow
(:mod:`.arrow`), conversion between magics (:mod:`.conversion`), measurement of formats (:mod:`.measure`)
and a segment's offsets (:mod:`.offsets`).

May import: kfmt.runtime, kfmt.codec, kfmt.storage, kfmt.payloads, kfmt.logdir (never kfmt.table, the tools
or Spark)."""
