"""The kafka-log source's JVM engine: kfmt's plan, decoded on the JVM by the jvm backend's Java decoders.

    df = spark.read.format("kafka-log").load("/data/kafka-logs")             # the JVM source, in the jar
    df = kfmt.spark.read(spark, "/data/kafka-logs", engine="jvm")            # the same, options as keywords

``kafka-log`` is a Spark DataSource V2 in the jar (``kfmt/runtime/jvm``, class ``kfmt.jvm.KafkaLog``). It asks
kfmt's one planner (:mod:`kfmt.spark.planner`: ``kfmt.table.plan.LogReader``, the log directory's rules,
read_committed's transactions, offset bounds, the batch being written) on the driver and decodes the plan's
slices into Spark's columns: no Python worker, no Arrow transfer, only the columns a query reads built; damage
as kfmt.log.scanner decides it (``on_corrupt=fail|skip|quarantine``, held there by ``make fuzz-jvm``). What it
does not decode yet the planner says (:func:`refusal`), and the source hands that read to kfmt's Python data
source (``engine="auto"``) or refuses it with the reason (``engine="jvm"``): stores the asking JVM has no
Hadoop FileSystem for (stores by URI are read through Hadoop's FileSystem API, ``kfmt.jvm.Source``; objects
stored compressed whole are decompressed as kfmt.storage.open_segment does), and a ``backend`` choice.
``decode_payloads`` is decoded here too, by the jvm backend's payload decoders (``kfmt.jvm.Internal``; their
differential with kfmt.payloads is :func:`payload_check`). kfmt tables are read here too, each task re-checking their commits (``kfmt.jvm.TableCheck``). Streams are decoded here too (``kfmt.jvm.LogStream``), their micro-batches cut by
:mod:`kfmt.spark.stream` on the driver. Writes are encoded here too (``kfmt.jvm.LogWriter``, with the jvm backend's
generated encoders; their differential with kfmt.encode_batch is :func:`encode_check`) and committed by
:mod:`kfmt.spark.writer` on the driver, through the planner; a write to a store by URI is the Python data source's.

The jar is built by ``make setup`` (:func:`build`: javac against the pyspark jars) and put on a session's
classpath by :func:`kfmt.spark.jobs.session` (``spark.jars``), by :func:`kfmt.spark.register` (``ADD JAR``), or
by ``spark-submit --jars``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
JAR = HERE / "kfmt-jvm.jar"
RUNTIME = HERE.parent / "runtime" / "jvm"
GENERATED = HERE.parent.parent / "generated"
ENGINES = ("auto", "jvm", "python")


def jar() -> str | None:
    """The engine's jar, when built."""
    return str(JAR) if JAR.exists() else None


def sources() -> list[Path]:
    """The Java sources: the hand-written runtime and the jvm backend's generated decoders."""
    return sorted(RUNTIME.rglob("*.java")) + sorted(GENERATED.rglob("jvm/*.java"))


def build(out: Path = JAR) -> Path:
    """Compile the sources against the pyspark jars into ``out`` (with the data source's service entry)."""
    import shutil
    import subprocess
    import tempfile
    import zipfile

    import pyspark

    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("javac not found: the JVM engine needs a JDK (17 or later) to build")
    classpath = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", classpath, "-d", tmp,
               *map(str, sources())]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            out.unlink(missing_ok=True)  # never a jar of older sources
            raise RuntimeError(f"javac failed:\n{r.stdout}{r.stderr}")
        part = out.with_suffix(".jar.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: kfmt\n")
            z.writestr(
                "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister",
                "kfmt.jvm.KafkaLog\nkfmt.jvm.KafkaCapture\n",
            )
            z.writestr("kfmt/jvm/schema.properties", _schemas())
            z.writestr("kfmt/jvm/bindings.properties", _bindings())
            z.writestr("kfmt/jvm/names.json", _names())
            for p in sorted(Path(tmp).rglob("*.class")):
                z.write(p, p.relative_to(tmp).as_posix())
        os.replace(part, out)  # a reader never sees half a jar
    return out


def _schemas() -> str:
    """The source's columns for the jar (kfmt.jvm.KafkaLog.inferSchema): the Python source's own definitions."""
    from kfmt.log.arrow import SCHEMA, SCHEMA_DECODED

    return f"plain={SCHEMA}\ndecoded={SCHEMA_DECODED}\n"


def _bindings() -> str:
    """Which schemas read which topic's keys and values (kfmt.jvm.Internal): kfmt.payloads.BINDINGS, as
    ``topic=key schema,value schema,parameter`` (empty: none)."""
    from kfmt.payloads import BINDINGS

    return "".join(f"{t}={b.key or ''},{b.value},{b.param or ''}\n" for t, b in sorted(BINDINGS.items()))


def _names() -> str:
    """The words of a write's refusals of topics and partitions (kfmt.jvm.Names): kfmt.logdir.names.TEXTS."""
    import json

    from kfmt.logdir.names import TEXTS

    return json.dumps(TEXTS)


def refusal_by_options(options: dict) -> str | None:
    """What the options alone say the JVM engine does not decode yet (None: nothing), said before any planning:
    the read is then planned once, by the Python data source it goes to."""
    from kfmt.table.options import _opt

    if _opt(options, "backend"):
        return "a backend choice (it decodes with its own)"
    fmt = _opt(options, "format")
    if fmt and fmt not in java_formats():
        return f"format {fmt} has no Java decoder"
    return None


def refusal(reader, options: dict, jvm_schemes=()) -> str | None:
    """Why the JVM engine does not decode a read with these options yet (None: it does); the kafka-log source
    then hands the read to kfmt's Python data source. ``jvm_schemes``: the URI schemes the JVM asking has a
    Hadoop FileSystem for (its executors read those stores through Hadoop's API, as Spark's own sources do)."""
    from urllib.parse import urlparse

    from kfmt.storage import is_uri

    why = refusal_by_options(options)
    if why is not None:
        return why
    for seg in reader.segments:
        if is_uri(seg.path):
            scheme = urlparse(seg.path).scheme.lower()
            if scheme not in jvm_schemes:
                return (
                    f"no Hadoop FileSystem for {scheme}:// in this JVM (the store's connector is not on its classpath)"
                )
        elif not os.path.isfile(seg.path):
            return f"{seg.path} is not a local file"
    return None


def on_classpath(spark) -> bool:
    """Whether the session's JVM can load the engine: its jar was in ``spark.jars`` when the JVM started, or
    is added now (``ADD JAR``: the session's class loader, and the executors')."""
    for attempt in range(2):
        try:
            loader = spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()
            loader.loadClass("kfmt.jvm.KafkaLog")
            return True
        except Exception:  # Spark Connect (no JVM here), or the class is not there yet
            if attempt or jar() is None:
                return False
            try:
                spark.sql(f"ADD JAR '{jar()}'")
            except Exception:
                return False
    return False


def java_formats() -> set[str]:
    """The log formats with a Java decoder (a folder of message schemas, generated/messages, is none)."""
    from kfmt.codec.formats import format_ids

    return {p.parent.parent.name for p in GENERATED.glob("*/jvm/*.java")} & set(format_ids())


def limits(verify_crc: bool) -> dict:
    """kfmt's decoding limits (DecodeOptions' defaults, as the Python engine reads with), for kfmt.jvm.Limits."""
    from kfmt.runtime.options import DecodeOptions

    d = DecodeOptions()
    names = ("max_decompressed", "max_ratio", "max_records", "max_headers", "max_bytes", "max_depth")
    return {"verify_crc": verify_crc, **{k: getattr(d, k) for k in names}}


def plan_json(reader) -> str:
    """The plan the JVM engine reads (kfmt.jvm.Plan), as JSON."""
    return json.dumps(plan(reader))


def plan(reader, groups=None) -> dict:
    """The plan the JVM engine reads (kfmt.jvm.Plan): read options, and the input partitions' slices (``groups``:
    sequences of slices, default ``reader.plan()``'s). A log's read_committed transactions are written once
    (``txns``) and named by each of its slices (``txn``)."""
    txns: list = []
    index: dict = {}

    def txn(s):
        if s.aborted is None:
            return None
        key = (id(s.aborted), id(s.open_txns))  # the slices of one log share their transactions' tuples
        if key not in index:
            index[key] = len(txns)
            txns.append({"aborted": [list(a) for a in s.aborted], "open": [list(o) for o in s.open_txns or ()]})
        return index[key]

    from kfmt.table.commit import recheck_files, table_root

    checks = recheck_files(reader.tables, reader.storage)
    roots = sorted(checks)

    def table(s):  # the table a task re-checks once it has read the slice (kfmt.table.plan.LogReader.read)
        root = table_root(s.path)
        return roots.index(root) if root in checks else None

    groups = [
        [
            {
                "path": s.path,
                "topic": s.topic,
                "partition": s.partition,
                "start": s.start,
                "end": s.end,
                "first": s.first_offset,
                "stop": s.stop_offset,
                "live_end": s.live_end,
                "txn": txn(s),
                "table": table(s),
            }  # fmt: skip
            for s in group
        ]
        for group in (reader.plan() if groups is None else groups)
    ]
    return {"limits": limits(reader.verify_crc), "include_control": reader.include_control, "format": reader.format,
            "on_corrupt": reader.on_corrupt, "null_empty_headers": reader.null_empty_headers, "txns": txns,
            "decompress": reader.compressed_objects == "read", "read_timeout_ms": reader.read_timeout * 1000,
            "groups": groups,
            "tables": [checks[r] for r in roots]}  # fmt: skip


def read(spark, path, *, engine: str = "auto", schema=None, **options):
    """``spark.read.format("kafka-log")`` with ``options`` and ``engine`` (``auto``: the JVM engine where it
    decodes the read, else kfmt's Python data source; ``jvm``: that engine or an error saying why; ``python``:
    the Python data source), loading ``path`` (a log directory, partition folders or segments; a list for
    several). ``schema`` narrows the columns as ``.schema(...)`` does. The same source as ``format("kafka-log")``:
    this only spells the options as keywords."""
    if engine not in ENGINES:
        raise ValueError(f"kafka-log: engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    paths = path if isinstance(path, str) else ",".join(map(str, path))
    df = spark.read.format("kafka-log")
    df = df.schema(schema) if schema is not None else df
    for k, v in options.items():
        df = df.option(k, v)
    return (df.option("engine", engine) if engine != "auto" else df).load(paths)


def main(argv=None) -> int:
    """``kfmt.spark.jvm.main(["build"])`` compiles the jar (make setup); ``kfmt spark jar`` prints its path."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["build"]:
        print("usage: kfmt.spark.jvm.main(['build'])   (compiles the JVM engine's jar)", file=sys.stderr)
        return 2
    try:
        out = build()
    except (RuntimeError, ImportError) as e:
        print(f"kfmt: the JVM engine is not built: {e}", file=sys.stderr)
        return 1
    print(f"kfmt: built the JVM engine: {out}")
    return 0


# ------------------------------------------------------------------ differential checks (fuzz/jvm_differential.py)
def _java_main(main: str, given: str, args: tuple = (), props: tuple = ()) -> str:
    """Standard output of ``java props... kfmt.jvm.<main> args...`` (the jar's check tools) given ``given`` on
    standard input."""
    import subprocess

    import pyspark

    jars = os.pathsep.join([str(JAR), os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")])
    r = subprocess.run(["java", *props, "-cp", jars, f"kfmt.jvm.{main}", *map(str, args)], input=given,
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"kfmt.jvm.{main} failed: {r.stderr.strip()[-2000:]}")
    return r.stdout


def name_check(rows: list) -> list:
    """Rows' topics and partitions as the JVM engine's writer judges them (``kfmt.jvm.NameCheck``, one JVM for all),
    for the differential with kfmt.logdir.names: each of ``rows`` is ``(topic bytes or None, partition or None,
    offset)``; each answer the refusal's line, or None."""
    given = "".join(f"{'-' if t is None else bytes(t).hex()}\t{'-' if p is None else p}\t{o}\n" for t, p, o in rows)
    return [None if line == "ok" else line for line in _java_main("NameCheck", given).splitlines()]


def payload_check(records: list) -> list[tuple]:
    """Records of Kafka's own topics (``(topic, key, value)``, bytes or None) decoded as option decode_payloads
    decodes them in the JVM (``kfmt.jvm.PayloadCheck``, one JVM for all): ``(key_decoded, value_decoded,
    payload_error)`` each, the columns kfmt.log.arrow.add_decoded makes."""
    given = "".join(f"{t}\t{'-' if k is None else bytes(k).hex()}\t{'-' if v is None else bytes(v).hex()}\n"
                    for t, k, v in records)  # fmt: skip

    def cell(c: str):
        if c == "\\N":
            return None
        return c.replace("\\\\", "\0").replace("\\t", "\t").replace("\\n", "\n").replace("\0", "\\")

    return [tuple(cell(c) for c in line.split("\t")) for line in _java_main("PayloadCheck", given).splitlines()]


def protocol_check(parts: list) -> list:
    """Parts of protocol frames decoded by the jvm backend's protocol decoders (``kfmt.jvm.ProtocolCheck``, one JVM
    for all), for the differential with kfmt.protocol: each of ``parts`` is ``(schema, version, frame, start)`` (the
    API's version for a body, the header's for a header); each answer ``(end, JSON text)``, or ``(None, error)``."""
    given = "".join(f"{schema}\t{version}\t{bytes(frame).hex()}\t{start}\n" for schema, version, frame, start in parts)
    out = []
    for line in _java_main("ProtocolCheck", given).splitlines():
        end, text = line.split("\t", 1)
        out.append((None, text) if end == "!" else (int(end), text))
    return out


#: kfmt's own additions to a message's JSON (a record set's batches, decoded): the JVM's message rows carry a
#: record set as its hex, its records being rows=records' rows
_KFMTS = ("_batches", "_partial", "_damage")


def without_kfmts(node):
    """Kafka's JSON of a message (or a part of it) without what kfmt.protocol adds beside it (a record set's batches,
    decoded): as the jvm backend's protocol decoders write it."""
    if isinstance(node, dict):
        return {k: without_kfmts(v) for k, v in node.items() if k not in _KFMTS}
    if isinstance(node, list):
        return [without_kfmts(x) for x in node]
    return node


def as_jvm_reads(row: dict) -> dict:
    """An object of `kfmt dump --json` as the JVM's capture reader gives it (:func:`capture_check`, the
    kafka-capture source's rows): record sets as their hex, notes without the damaged record sets' lines (problems
    of the capture there), a client id that is not UTF-8 as Kafka's broker reads it (U+FFFD for each byte that is
    not; the header keeps its bytes)."""
    row = without_kfmts(row)
    notes = [n for n in row.pop("notes", []) if not n.startswith("body.")]
    client_id = (row.get("header") or {}).get("ClientId")
    if isinstance(client_id, dict):
        row["client_id"] = client_id["kafka"]
    return row | ({"notes": notes} if notes else {})


def capture_check(paths: list, port: int | None = None, spool: tuple[int, int, int] | None = None,
                  heap: str | None = None, records: bool = False) -> dict:  # fmt: skip
    """Captures read by the JVM's capture reader (``kfmt.jvm.CaptureCheck``, the kafka-capture source's, one JVM for
    all), for the differential with ``kfmt dump --json``: by path, ``{"rows": [the object kfmt dump --json prints of
    each message], "problem": [line], "note": [line], "error": [line]}``. ``spool``: (bytes a direction holds in
    memory before its spool file, bytes read back at once, bytes all directions hold in memory), small to read every
    capture through files; ``heap``:
    the JVM's largest heap (``-Xmx``, e.g. "64m"); ``records``: the rows are the records the messages carry
    (rows=records' columns, bytes as hex) instead."""
    import json

    out: dict = {}
    cur: dict = {}
    props: tuple[str, ...] = () if heap is None else (f"-Xmx{heap}",)
    if spool is not None:
        props += (f"-Dkfmt.capture.chunk={spool[0]}", f"-Dkfmt.capture.window={spool[1]}",
                  f"-Dkfmt.capture.memory={spool[2]}")  # fmt: skip
    args = (*(("--port", port) if port is not None else ()), *(("--records",) if records else ()), *paths)
    for line in _java_main("CaptureCheck", "", args, props).splitlines():
        o = json.loads(line)
        if "capture" in o:
            cur = out[o["capture"]] = {"rows": [], "problem": [], "note": [], "error": []}
            continue
        kind = next((k for k in ("problem", "note", "error") if k in o and len(o) == 1), None)
        cur["rows" if kind is None else kind].append(o if kind is None else o[kind])
    return out


def encode_check(batches: list) -> list:
    """Batches encoded by the jvm backend's generated encoders (``kfmt.jvm.EncodeCheck``, one JVM for all), for the
    differential with kfmt.encode_batch: each of ``batches`` is ``(format id, {batch field: int}, records)``, a record
    ``(offset, timestamp, key, value, [(header key bytes, value)])``; each answer the batch's bytes, or the error's
    text (a str)."""

    def hx(b) -> str:
        return "-" if b is None else bytes(b).hex()

    lines = []
    for fmt, fields, records in batches:
        fs = ",".join(f"{k}={int(v)}" for k, v in fields.items())
        rs = ";".join(f"{o},{t},{hx(k)},{hx(v)},{'+'.join(f'{hx(a)}.{hx(b)}' for a, b in hs)}"
                      for o, t, k, v, hs in records)  # fmt: skip
        lines.append(f"{fmt}\t{fs}\t{rs}\n")
    out = _java_main("EncodeCheck", "".join(lines)).splitlines()
    return [line[1:] if line.startswith("!") else bytes.fromhex(line) for line in out]


def check(*plans, hadoop: dict | None = None, classpath: tuple = (), errors: bool = False) -> list[tuple]:
    """Each group of each plan, in order, read by the JVM engine's reader without Spark (``kfmt.jvm.Check``, one
    JVM for all): ``("ok", rows, digest)`` or ``("error", message)``, the digest as :func:`row_digest` computes it.
    ``hadoop``: Hadoop settings for stores by URI (as a session's ``spark.hadoop.*``); a plan given as ``(plan,
    settings)`` is read with those settings changed from then on; ``classpath``: more jars; ``errors``: an "ok"
    also gives its quarantine rows' errors, ``("ok", rows, digest, [error, ...])``."""
    import subprocess
    import tempfile

    import pyspark

    jars = os.pathsep.join(
        [str(JAR), *map(str, classpath), os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")]
    )
    props = [f"-Dkfmt.hadoop.{k}={v}" for k, v in (hadoop or {}).items()] + [
        f"-Dkfmt.check.errors={str(errors).lower()}"
    ]
    with tempfile.TemporaryDirectory() as d:
        files: list[str] = []
        for i, given in enumerate(plans):
            plan, settings = given if isinstance(given, tuple) else (given, {})
            for k, v in settings.items():
                files += ["--set", f"{k}={v}"]
            files.append(os.path.join(d, f"plan-{i}.json"))
            with open(files[-1], "w") as f:
                f.write(plan)
        r = subprocess.run(["java", *props, "-cp", jars, "kfmt.jvm.Check", *files], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kfmt.jvm.Check failed: {r.stderr.strip()[-2000:]}")
    out: list[tuple] = []
    for line in r.stdout.splitlines():
        kind, *rest = line.split("\t")
        if kind != "ok":
            out.append(("error", rest[0] if rest else ""))
        else:
            out.append(("ok", int(rest[0]), int(rest[1]), rest[2:]) if errors else ("ok", int(rest[0]), int(rest[1])))
    return out


def row_digest(batches) -> tuple[int, int]:
    """(rows, CRC-32) over Arrow batches' offset, timestamp_ms, key, value and headers (a quarantine row: its
    position, raw bytes and error), serialized as ``kfmt.jvm.Check`` serializes them."""
    import struct
    import zlib

    def blob(v) -> bytes:
        return struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v

    crc, rows = 0, 0
    for b in batches:
        d = b.to_pydict()
        for i in range(b.num_rows):
            error = (d.get("error") or [None] * b.num_rows)[i]
            if error is not None:  # a quarantine row: its position, raw bytes and error
                crc = zlib.crc32(
                    b"Q" + struct.pack(">q", d["position"][i]) + blob(d["raw"][i]) + blob(error.encode()), crc
                )
                continue
            ts = d["timestamp_ms"][i]
            parts = [
                struct.pack(">qbq", d["offset"][i], ts is not None, ts or 0),
                blob(d["key"][i]),
                blob(d["value"][i]),
            ]
            heads = d["headers"][i] or []
            parts.append(struct.pack(">i", len(heads)))
            for h in heads:
                parts += [blob(h["key"].encode("utf-8")), blob(h["value"])]
            crc = zlib.crc32(b"".join(parts), crc)
        rows += b.num_rows
    return rows, crc
