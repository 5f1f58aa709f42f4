"""Protection-domain probes, kselftest style: each probe's name is its specification.

Run by the cpython-mpk runtime -- natively, or inside QEMU where protection keys are
emulated -- as ``python probes.py [--require-keys] [NAME...]``.  Every probe runs in a
forked child whose SIGSEGV/SIGBUS go to ``_faastlane``'s fault reporter, writing into a
pipe; the parent records how the child ended (exit status or killing signal, the
fault's si_code and si_pkey, the notes the probe made) and prints one
``FAASTLANE-PROBE`` line (see probe_protocol.py).  The tests in test_*.py assert on
those lines: this file reports facts and decides nothing.

Probes in COMMON run with or without keys; probes in WITH_KEYS need real (or emulated)
protection keys and are run only where ``_faastlane.available()``.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import _faastlane
from probe_protocol import FAULT_PREFIX, ProbeResult, parse_fault_line

Note = Callable[[str, Any], None]
Probe = Callable[[Note], None]

PAGE = 4096
SECRET = b"secret-of-domain-A"
PROBE_TIMEOUT = float(os.environ.get("FAASTLANE_PROBE_TIMEOUT", "120"))


# ---------------------------------------------------------------------------
# Helpers used inside probes


def poke(address: int, data: bytes) -> None:
    """Write ``data`` at ``address`` (faults if this thread may not)."""
    ctypes.memmove(address, data, len(data))


def peek(address: int, size: int) -> bytes:
    """Read ``size`` bytes at ``address`` (faults if this thread may not)."""
    return ctypes.string_at(address, size)


def in_thread(body: Callable[[], None]) -> None:
    """Run ``body`` in a new thread, wait for it, re-raise what it raised."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def error_name(call: Callable[[], object]) -> str | None:
    """The class name of what ``call`` raised, or None if it returned."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return None


def domain_with_secret(note: Note, label: str = "a") -> tuple[_faastlane.Domain, int]:
    """A new domain with SECRET written (from inside) into a fresh page of its slot."""
    domain = _faastlane.Domain()
    address = domain.alloc(PAGE)
    with domain:
        poke(address, SECRET)
    note(f"{label}_key", domain.key)
    note(f"{label}_slot", domain.slot)
    note(f"{label}_address", address)
    return domain, address


# ---------------------------------------------------------------------------
# Probes that hold with and without keys


def _detected(setting: str, names: tuple[str, ...], expressions: str) -> dict[str, object]:
    """What a fresh interpreter with FAASTLANE_MPK=``setting`` reports: each of ``names``
    from the JSON list ``expressions`` evaluates to (``f`` is _faastlane)."""
    code = f"import _faastlane as f, json; print(json.dumps([{expressions}]))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=dict(os.environ, FAASTLANE_MPK=setting)).stdout
    return dict(zip(names, json.loads(out), strict=True))


def detection_reports_availability_and_reason(note: Note) -> None:
    # The host's own detection (auto), whatever the probe run selected.
    for name, value in _detected("auto", ("available", "reason", "implementation",
                                          "has_read_pkru", "restore_thread_pkru"),
                                 "f.available(), f.unavailable_reason(), f.implementation(), "
                                 "hasattr(f, 'read_pkru'), f.restore_thread_pkru()").items():
        note(name, value)


def keys_off_setting_selects_no_keys_implementation(note: Note) -> None:
    for name, value in _detected("off", ("available", "reason", "implementation", "key",
                                         "has_read_pkru"),
                                 "f.available(), f.unavailable_reason(), f.implementation(), "
                                 "f.Domain().key, hasattr(f, 'read_pkru')").items():
        note(name, value)


def domain_thread_reads_and_writes_its_own_buffer(note: Note) -> None:
    domain, address = domain_with_secret(note)
    seen: list[bytes] = []

    def body() -> None:
        with domain:
            seen.append(peek(address, len(SECRET)))
            poke(address, b"rewritten")
            seen.append(peek(address, 9))

    in_thread(body)
    note("read", seen[0].decode())
    note("reread", seen[1].decode())


def threads_in_two_domains_both_read_shared_memory(note: Note) -> None:
    shared = ctypes.create_string_buffer(b"shared-input", 32)  # key 0 memory
    a = _faastlane.Domain()
    b = _faastlane.Domain()
    seen: dict[str, str] = {}

    def reader(name: str, domain: _faastlane.Domain) -> Callable[[], None]:
        def body() -> None:
            with domain:
                seen[name] = peek(ctypes.addressof(shared), 12).decode()
                own = domain.alloc(64)
                poke(own, name.encode())
                seen[name + "_own"] = peek(own, len(name)).decode()

        return body

    in_thread(reader("a", a))
    in_thread(reader("b", b))
    for key, value in seen.items():
        note(key, value)


def alloc_returns_zeroed_memory_inside_the_domain_slot(note: Note) -> None:
    domain = _faastlane.Domain()
    first = domain.alloc(100)
    second = domain.alloc(5000, align=4096)
    big = domain.alloc(3 << 20)
    note("base", domain.base)
    note("size", domain.size)
    note("addresses", [first, second, big])
    note("committed", domain.committed)
    note("used", domain.used)
    note("slot_of", [_faastlane.slot_of(a) for a in (first, second, big)])
    note("owner_is_domain", [_faastlane.owner_of(a) is domain for a in (first, second, big)])
    note("slot_of_shared", _faastlane.slot_of(id(note)))
    with domain:
        note("zero", peek(big, 3 << 20) == bytes(3 << 20))
    note("bad_size_error", error_name(lambda: domain.alloc(0)))
    note("bad_align_error", error_name(lambda: domain.alloc(8, align=3)))
    note("too_big_error", error_name(lambda: domain.alloc(domain.size)))


def current_domain_follows_the_gates_per_thread(note: Note) -> None:
    a = _faastlane.Domain()
    b = _faastlane.Domain()
    seen: dict[str, bool] = {}
    note("before", _faastlane.current_domain() is None)
    with a:
        seen["main_in_a"] = _faastlane.current_domain() is a

        def body() -> None:
            seen["thread_starts_in_none"] = _faastlane.current_domain() is None
            with b:
                seen["thread_in_b"] = _faastlane.current_domain() is b
            seen["thread_after"] = _faastlane.current_domain() is None

        in_thread(body)
        seen["main_still_in_a"] = _faastlane.current_domain() is a
    seen["main_after"] = _faastlane.current_domain() is None
    seen["live"] = _faastlane.live_domains() == [a, b]
    for key, value in seen.items():
        note(key, value)


def gate_misuse_raises_and_leaves_domain_usable(note: Note) -> None:
    a = _faastlane.Domain()
    b = _faastlane.Domain()
    note("exit_not_entered", error_name(a.exit))
    a.enter()
    note("nested_enter_same", error_name(a.enter))
    note("nested_enter_other", error_name(b.enter))
    note("exit_other_domain", error_name(b.exit))
    note("destroy_while_inside", error_name(a.destroy))
    a.exit()
    note("exit_twice", error_name(a.exit))
    b.destroy()
    note("enter_destroyed", error_name(b.enter))
    note("destroy_destroyed", error_name(b.destroy))
    note("alloc_destroyed", error_name(lambda: b.alloc(16)))
    note("current_after_misuse", _faastlane.current_domain() is None)
    address = a.alloc(16)
    with a:
        poke(address, b"ok")
        note("usable_after_misuse", peek(address, 2).decode())
    note("counters", _faastlane.counters())
    note("gate_error_is_domain_error", issubclass(_faastlane.GateError, _faastlane.DomainError))
    note(
        "limit_error_is_domain_error",
        issubclass(_faastlane.DomainLimitError, _faastlane.DomainError),
    )


def exit_from_a_thread_that_did_not_enter_raises(note: Note) -> None:
    domain = _faastlane.Domain()
    domain.enter()
    outcome: list[str | None] = []
    in_thread(lambda: outcome.append(error_name(domain.exit)))
    note("other_thread_exit", outcome[0])
    note("entered_after", domain.entered)
    domain.exit()
    note("entered_end", domain.entered)


def destroy_refused_while_another_thread_is_inside(note: Note) -> None:
    domain = _faastlane.Domain()
    inside = threading.Event()
    leave = threading.Event()

    def body() -> None:
        with domain:
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=body)
    thread.start()
    inside.wait(30)
    note("entered", domain.entered)
    note("destroy_while_inside", error_name(domain.destroy))
    leave.set()
    thread.join()
    note("destroy_after_exit", error_name(domain.destroy))
    note("alive", domain.alive)


def more_than_fifteen_live_domains_park_idle_ones(note: Note) -> None:
    """Twenty domains, each keeping a marker in its own memory across two rounds of
    entries: past fifteen, an entry takes the key of the domain idle longest."""
    domains = [_faastlane.Domain() for _ in range(20)]
    note("keys_at_creation", [d.key for d in domains])
    note("slots", len({d.slot for d in domains}))
    addresses = []
    for i, domain in enumerate(domains):
        with domain:  # allocated inside: a parked domain has no key to tag pages with
            addresses.append(domain.alloc(PAGE))
            poke(addresses[-1], b"domain-%02d" % i)
    readback = 0
    held_keys = []
    for i, domain in enumerate(domains):
        with domain:
            readback += peek(addresses[i], 9) == b"domain-%02d" % i
            held_keys.append(domain.key)
    note("readback_ok", readback)
    note("keys_while_inside", held_keys)
    note("counters", _faastlane.counters())
    more = [_faastlane.Domain() for _ in range(_faastlane.SLOT_COUNT - len(domains))]
    note("past_every_slot", error_name(_faastlane.Domain))
    more.pop().destroy()
    note("after_destroy", _faastlane.Domain().alive)


def two_hundred_domains_created_and_destroyed_in_sequence_recycle_keys(note: Note) -> None:
    keys: set[int | None] = set()
    slots: set[int] = set()
    readback_ok = 0
    for i in range(200):
        domain = _faastlane.Domain()
        address = domain.alloc(PAGE)
        marker = b"domain-%03d" % i
        with domain:
            poke(address, marker)
            readback_ok += peek(address, len(marker)) == marker
        keys.add(domain.key)
        slots.add(domain.slot)
        domain.destroy()
    note("readback_ok", readback_ok)
    note("keys", sorted(k for k in keys if k is not None))
    note("slots_used", len(slots))
    note("counters", _faastlane.counters())


def destroyed_domain_slot_faults_on_access(note: Note) -> None:
    domain, address = domain_with_secret(note)
    domain.destroy()
    note("about_to_read", True)
    note("read", peek(address, len(SECRET)).decode())


def recycled_slot_and_key_read_zero_not_previous_secret(note: Note) -> None:
    first, address = domain_with_secret(note)
    slot = first.slot
    first.destroy()
    # Slots are handed out round robin: cycle until the same slot comes back.
    for _ in range(_faastlane.SLOT_COUNT):
        again = _faastlane.Domain()
        if again.slot == slot:
            break
        again.destroy()
    note("same_slot", again.slot == slot)
    note("again_key", again.key)
    reused = again.alloc(PAGE)
    note("same_address", reused == address)
    with again:
        note("content", peek(reused, len(SECRET)).hex())


def forked_child_can_destroy_domain_entered_by_another_thread(note: Note) -> None:
    domain = _faastlane.Domain()
    inside = threading.Event()
    leave = threading.Event()

    def body() -> None:
        with domain:
            inside.set()
            leave.wait(60)

    thread = threading.Thread(target=body)
    thread.start()
    inside.wait(30)
    pid = os.fork()
    if pid == 0:  # only this thread survives in the child
        os._exit(0 if error_name(domain.destroy) is None else 1)
    _, status = os.waitpid(pid, 0)
    note("child_destroy_status", os.waitstatus_to_exitcode(status))
    note("parent_still_entered", domain.entered)
    leave.set()
    thread.join()


def destroyed_domain_objects_are_released(note: Note) -> None:
    domain = _faastlane.Domain()
    live_refs = sys.getrefcount(domain)
    domain.destroy()
    note("references_dropped_by_destroy", live_refs - sys.getrefcount(domain))
    note("live_domains", len(_faastlane.live_domains()))


def counters_count_every_gate_crossing(note: Note) -> None:
    before = _faastlane.counters()
    domain = _faastlane.Domain()
    for _ in range(1000):
        domain.enter()
        domain.exit()
    note("domain_enters", domain.enters)
    note("domain_exits", domain.exits)
    domain.destroy()
    after = _faastlane.counters()
    note("delta", {k: after[k] - before[k] for k in after})


def gate_code_is_one_checked_wrpkru_sequence(note: Note) -> None:
    note("gate_code", _faastlane.gate_code().hex())


# ---------------------------------------------------------------------------
# Probes that need protection keys


def read_by_thread_in_other_domain_faults_with_owner_pkey(note: Note) -> None:
    _, address = domain_with_secret(note, "a")
    b = _faastlane.Domain()
    note("b_key", b.key)

    def body() -> None:
        with b:
            note("about_to_read", True)
            note("read", peek(address, len(SECRET)).decode())

    in_thread(body)


def write_by_thread_in_other_domain_faults_with_owner_pkey(note: Note) -> None:
    a, address = domain_with_secret(note, "a")
    b = _faastlane.Domain()
    note("b_key", b.key)

    def body() -> None:
        with b:
            note("about_to_write", True)
            poke(address, b"overwritten-by-B")
            note("wrote", True)

    in_thread(body)


def parked_domain_memory_faults_for_every_thread(note: Note) -> None:
    """Sixteen domains entered in turn: the first one's key went to the sixteenth, so
    its pages carry the parking key, which no thread holds -- not even one inside the
    domain that took its old key."""
    first, address = domain_with_secret(note, "a")
    others = [_faastlane.Domain() for _ in range(15)]
    for other in others:
        with other:
            other.alloc(PAGE)
    note("a_key_now", first.key)
    note("counters", _faastlane.counters())
    holder = others[-1]

    def body() -> None:
        with holder:
            note("holder_key", holder.key)
            note("about_to_read", True)
            note("read", peek(address, len(SECRET)).decode())

    in_thread(body)


def read_from_outside_every_domain_faults_with_owner_pkey(note: Note) -> None:
    _, address = domain_with_secret(note, "a")
    note("about_to_read", True)
    note("read", peek(address, len(SECRET)).decode())


def thread_started_outside_domains_cannot_read_domain_memory(note: Note) -> None:
    _, address = domain_with_secret(note, "a")

    def body() -> None:
        note("about_to_read", True)
        note("read", peek(address, len(SECRET)).decode())

    in_thread(body)


def pkru_inside_domain_grants_key_zero_and_own_key_only(note: Note) -> None:
    a = _faastlane.Domain()
    b = _faastlane.Domain()
    note("a_key", a.key)
    note("b_key", b.key)
    note("a_pkru", a.pkru)
    seen: dict[str, int] = {}

    def body() -> None:
        seen["fresh_thread"] = _faastlane.read_pkru()
        with a:
            seen["in_a"] = _faastlane.read_pkru()
        seen["after_a"] = _faastlane.read_pkru()
        with b:
            seen["in_b"] = _faastlane.read_pkru()
        seen["after_b"] = _faastlane.read_pkru()

    in_thread(body)
    for key, value in seen.items():
        note(key, value)


def exited_thread_keeps_no_access_to_recycled_key(note: Note) -> None:
    first = _faastlane.Domain()
    note("first_key", first.key)
    first.enter()
    first.exit()  # this thread held first.key once
    first.destroy()
    second, address = domain_with_secret(note, "second")  # the same key again
    note("about_to_read", True)
    note("read", peek(address, len(SECRET)).decode())


def thread_started_inside_domain_inherits_access_until_restored(note: Note) -> None:
    a, address = domain_with_secret(note, "a")
    seen: dict[str, object] = {}

    def child() -> None:  # started while its creator is inside a
        seen["inherited_read"] = peek(address, len(SECRET)).decode()
        seen["current_domain"] = _faastlane.current_domain()
        seen["restored"] = _faastlane.restore_thread_pkru()
        note("inherited_read", seen["inherited_read"])
        note("current_domain_is_none", seen["current_domain"] is None)
        note("restored", seen["restored"])
        note("about_to_read", True)
        note("read", peek(address, len(SECRET)).decode())

    with a:
        in_thread(child)


def fault_reporter_restores_thread_pkru_on_signal_path(note: Note) -> None:
    a = _faastlane.Domain()
    _, address = domain_with_secret(note, "b")
    note("a_key", a.key)
    note("a_pkru", a.pkru)

    def body() -> None:
        with a:
            note("about_to_read", True)
            peek(address, len(SECRET))

    in_thread(body)


COMMON: list[Probe] = [
    detection_reports_availability_and_reason,
    keys_off_setting_selects_no_keys_implementation,
    domain_thread_reads_and_writes_its_own_buffer,
    threads_in_two_domains_both_read_shared_memory,
    alloc_returns_zeroed_memory_inside_the_domain_slot,
    current_domain_follows_the_gates_per_thread,
    gate_misuse_raises_and_leaves_domain_usable,
    exit_from_a_thread_that_did_not_enter_raises,
    destroy_refused_while_another_thread_is_inside,
    more_than_fifteen_live_domains_park_idle_ones,
    two_hundred_domains_created_and_destroyed_in_sequence_recycle_keys,
    destroyed_domain_slot_faults_on_access,
    recycled_slot_and_key_read_zero_not_previous_secret,
    forked_child_can_destroy_domain_entered_by_another_thread,
    destroyed_domain_objects_are_released,
    counters_count_every_gate_crossing,
    gate_code_is_one_checked_wrpkru_sequence,
]

WITH_KEYS: list[Probe] = [
    read_by_thread_in_other_domain_faults_with_owner_pkey,
    write_by_thread_in_other_domain_faults_with_owner_pkey,
    read_from_outside_every_domain_faults_with_owner_pkey,
    parked_domain_memory_faults_for_every_thread,
    thread_started_outside_domains_cannot_read_domain_memory,
    pkru_inside_domain_grants_key_zero_and_own_key_only,
    exited_thread_keeps_no_access_to_recycled_key,
    thread_started_inside_domain_inherits_access_until_restored,
    fault_reporter_restores_thread_pkru_on_signal_path,
]


# ---------------------------------------------------------------------------
# The runner


def run_child(probe: Probe, write_fd: int) -> None:
    """Body of the forked child: never returns."""
    _faastlane.install_fault_reporter(write_fd)

    def note(key: str, value: Any) -> None:
        os.write(write_fd, ("note " + json.dumps({key: value}) + "\n").encode())

    code = 0
    try:
        probe(note)
    except BaseException:
        note("__error__", traceback.format_exc())
        code = 3
    os._exit(code)


def read_until_eof(fd: int, pid: int, deadline: float) -> tuple[bytes, bool]:
    """Everything the child writes to ``fd``; True as second item on timeout."""
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os.kill(pid, signal.SIGKILL)
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)


def run_probe(probe: Probe) -> ProbeResult:
    """Run ``probe`` in a child process and describe how the child ended."""
    result = ProbeResult(name=probe.__name__)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        run_child(probe, write_fd)
    os.close(write_fd)
    data, result.timed_out = read_until_eof(read_fd, pid, time.monotonic() + PROBE_TIMEOUT)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        result.signal = os.WTERMSIG(status)
    else:
        result.exit_code = os.WEXITSTATUS(status)
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("note "):
            result.notes.update(json.loads(line[5:]))
        elif line.startswith(FAULT_PREFIX):
            result.fault = parse_fault_line(line)
    result.error = result.notes.pop("__error__", None)
    return result


def main(argv: list[str]) -> int:
    """Run the selected probes (all that apply by default), one line each."""
    require_keys = "--require-keys" in argv
    names = [a for a in argv if not a.startswith("--")]
    if require_keys and not _faastlane.available():
        print(
            f"probes: protection keys required but unavailable: {_faastlane.unavailable_reason()}",
            flush=True,
        )
        return 2
    table = COMMON + (WITH_KEYS if _faastlane.available() else [])
    if names:
        table = [p for p in COMMON + WITH_KEYS if p.__name__ in names]
    for probe in table:
        print(run_probe(probe).to_line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
