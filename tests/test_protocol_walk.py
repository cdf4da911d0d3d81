"""The check walk (generator.ir.walk): a frame in the plain form is read by walking it, its header and body built
when first asked for. What holds it: a walk that answers ends where every decoder ends and the value then
decodes without an error (for every API x version x kind, and for mutated frames); the C and Python walks give
the same answer (one rule rendered twice); a frame a walk declines is decoded as it is read, so damage is raised
by the read, never by a later ``body``."""

from __future__ import annotations

import dataclasses
import random

import pytest
import test_protocol as T

import kfmt
import kfmt.protocol as P
from fuzz.campaign import mutate
from kfmt.codec.formats import available_backends
from kfmt.runtime.options import DEFAULT_OPTIONS

WALKERS = [b for b in ("python", "native") if b in available_backends()]


def _seeds() -> list[tuple[str, int, int, bytes]]:
    return [(kind, key, v, T._write(key, kind, v, T._sample_body(key, kind, v)))
            for key, v in T._cases() for kind in ("request", "response")]  # fmt: skip


def _walks(kind: str, key: int, version: int, frame: bytes, backend: str) -> tuple[int, int]:
    """(where the header walk ends, where the body walk ends): -1 for a walk that declines (or was not made)."""
    p = P._plan(kind, key, version, backend)
    assert p is not None and p.check is not None and p.header_check is not None
    head = p.header_check(frame, 0, len(frame), DEFAULT_OPTIONS, p.header_version)
    return head, (p.check(frame, head, len(frame), DEFAULT_OPTIONS, version) if head >= 0 else -1)


def _decoded_ends(kind: str, key: int, version: int, frame: bytes, backend: str) -> tuple[int, int]:
    p = P._plan(kind, key, version, backend)
    assert p is not None
    _, head = p.header.decode_from(frame, 0, len(frame), DEFAULT_OPTIONS, header_version=p.header_version)
    _, end = p.body.decode_from(frame, head, len(frame), DEFAULT_OPTIONS, api_version=version)
    return head, end


@pytest.mark.parametrize("backend", WALKERS)
def test_every_api_and_version_is_walked_to_where_its_decoders_end(backend):
    """Every API x version x kind's sample frame (every field its version has set): where the walks answer, it is
    at the positions the header and body decoders end at, and the message read is walked, its values built when
    asked for equal to the values decoded at once; a sample with a tagged field set (not the plain form) is
    decoded as it is read. Most samples are walked."""
    walked = decoded = 0
    for kind, key, version, frame in _seeds():
        where = (P.api(key).name, kind, version)
        ends = _walks(kind, key, version, frame, backend)
        m = T._read(frame, kind, key, version, backend)
        if ends[1] < 0:
            assert m._body is not P._UNREAD, where
            decoded += 1
            continue
        assert ends == _decoded_ends(kind, key, version, frame, backend), where
        assert m._body is P._UNREAD and m._header is P._UNREAD, where  # walked: nothing built yet
        p = P._plan(kind, key, version, backend)
        assert m.header == p.header.decode_from(frame, 0, len(frame), header_version=m.header_version)[0], where
        assert m.body == p.body.decode_from(frame, m._pos, len(frame), api_version=version)[0], where
        assert m.encode() == frame, where
        walked += 1
    assert walked > 10 * decoded and walked + decoded > 650, (walked, decoded)  # 686 API x version x kind here


def test_the_c_and_python_walks_answer_alike_on_mutated_frames():
    """One rule rendered twice: on 20,000 mutated frames of every API the native and python walks give the same
    answer, and where they answer, both backends decode the header and body to those ends without an error."""
    if len(WALKERS) < 2:
        pytest.skip("the native backend is not built here")
    rng = random.Random("walk/differential")
    pool = _seeds()
    answered = 0
    for _ in range(20_000):
        kind, key, version, frame = rng.choice(pool)
        data = mutate(frame, rng)
        said = {b: _walks(kind, key, version, data, b) for b in WALKERS}
        assert said["python"] == said["native"], (P.api(key).name, kind, version, data.hex())
        if said["python"][1] >= 0:
            answered += 1
            for b in WALKERS:
                assert _decoded_ends(kind, key, version, data, b) == said[b], (b, P.api(key).name, data.hex())
    print(f"{answered:,} of 20,000 mutated frames walked")
    assert answered > 2_000  # the mutations leave many frames plain (a changed value, not a changed shape)


@pytest.mark.parametrize("backend", WALKERS)
def test_damage_is_raised_by_the_read_not_by_a_later_body(backend):
    """A frame cut inside its body, or with a count beyond its bytes: the walk declines, the read decodes and
    raises the located error, as before there was a walk."""
    frame = T._write(3, "response", 12, T._sample_body(3, "response", 12))
    for bad in (frame[:-3], frame[:9] + b"\xff\xff\xff\x0f" + frame[13:]):
        with pytest.raises(kfmt.CodecError) as e:
            P.read_response(bad, 3, 12, backend=backend)
        assert "\n" not in str(e.value) and "body" in str(e.value)


@pytest.mark.parametrize("backend", WALKERS)
def test_a_frame_not_in_the_plain_form_is_decoded_as_it_is_read(backend):
    """An unknown tag and a non-ASCII client id are what every decoder reads, but not the plain form a walk
    answers for: such a frame is decoded as it is read, and re-encodes to its bytes."""
    body = {"Topics": None, "AllowAutoTopicCreation": True, "IncludeTopicAuthorizedOperations": False,
            "_unknownTaggedFields": [{"tag": 9, "data": "00ff"}]}  # fmt: skip
    for frame in (P.write_request(3, 12, body, correlation_id=1, client_id="k"),
                  P.write_request(3, 12, {**body, "_unknownTaggedFields": []}, client_id="kafka-\u00e9")):  # fmt: skip
        m = P.read_request(frame, backend=backend)
        assert m._body is not P._UNREAD and m._header is not P._UNREAD
        assert m.encode() == frame


@pytest.mark.parametrize("backend", WALKERS)
def test_a_frame_too_large_for_the_memory_budget_to_bound_is_decoded(backend, monkeypatch):
    """A frame larger than max_memory / CHECK_FACTOR is not walked (its decoders' memory budgets could be
    exceeded where the walk keeps none): it is decoded as it is read. (The bound is lowered to this frame's size
    less one: a frame of 2.6 MB would hold more topics than max_headers allows.)"""
    frame = T._write(3, "response", 12, T._sample_body(3, "response", 12))
    p = P._plan("response", 3, 12, backend)
    assert p is not None and 0 < p.walk_max < DEFAULT_OPTIONS.max_memory
    assert p.walk_max == DEFAULT_OPTIONS.max_memory // max(p.header.CHECK_FACTOR, p.body.CHECK_FACTOR)
    assert P.read_response(frame, 3, 12, backend=backend)._body is P._UNREAD
    key = next(k for k, v in P._PLANS.items() if v is p)
    monkeypatch.setitem(P._PLANS, key, dataclasses.replace(p, walk_max=len(frame) - 1))
    m = P.read_response(frame, 3, 12, backend=backend)
    assert m._body is not P._UNREAD and m.encode() == frame
