"""How the native API shows apps (the app object of docs/user/api.md), times and its one-line
refusals of a request's shape."""

from __future__ import annotations

from sessionsched.doors.common.times import iso
from sessionsched.doors.native.schemas import (
    AppOut,
    CounterOfferOut,
    DryRunOut,
    GangOut,
    ReservationOut,
)
from sessionsched.operations.port import AppRead


def validation_detail(errors: list) -> str:
    """A request-shape refusal in one line: the first of pydantic's (or FastAPI's) errors, with
    where it is (a body field's path) and what is wrong."""
    first = errors[0] if errors else {}
    # A field name from the body can hold anything: one that is not printable is quoted.
    loc = ".".join(str(p) if str(p).isprintable() else repr(p)
                   for p in first.get("loc", ()) if p != "body")
    msg = first.get("msg", "invalid request")
    if first.get("type") == "json_invalid":
        return f"request body is not valid JSON: {first.get('ctx', {}).get('error', msg)}"
    if first.get("type") == "missing":
        return f"{loc}: missing" if loc else "request body is missing"
    return f"{loc}: {msg}" if loc else msg


def unreadable(cause: BaseException) -> str | None:
    """One line for why a body is not JSON at all — bytes that are not UTF-8, or nesting deeper
    than Python's parser goes — from what ``json.loads`` raised; None for other errors."""
    if isinstance(cause, UnicodeDecodeError):
        return (f"request body is not valid JSON: not UTF-8 (byte 0x{cause.object[cause.start]:02x}"
                f" at position {cause.start})")
    if isinstance(cause, RecursionError):
        return "request body is not valid JSON: nested too deeply"
    return None


def offer_out(offer) -> CounterOfferOut | None:
    if offer is None:
        return None
    return CounterOfferOut(executors=offer.executors, estimated_start=iso(offer.start_at),
                           instead_of=offer.instead_of, text=offer.text)


def gang_out(app: AppRead) -> GangOut | None:
    gang, res = app.gang, app.reservation
    if gang is None:
        return None
    reservation = None
    if res is not None:
        started = res.held.cores > 0 or res.held.mem_mib > 0  # else no clock runs yet
        reservation = ReservationOut(
            held_cores=res.held.cores, held_memory_mib=res.held.mem_mib,
            needed_cores=res.needed.cores, needed_memory_mib=res.needed.mem_mib,
            since=iso(res.since) if started else None,
            deadline=iso(res.deadline) if started else None)
    return GangOut(executors=gang.executors, timeout_s=gang.timeout_s, style=gang.style.value,
                   reservation=reservation)


def dry_run_out(queue: str, answer) -> DryRunOut:
    """``answer``: the operations port's dry run (``estimating.DryRunAnswer``)."""
    return DryRunOut(fits=answer.fits, problem=answer.problem, queue=queue,
                     position=answer.position, reason=answer.reason,
                     estimated_start=iso(answer.estimate.start_at),
                     counter_offer=offer_out(answer.estimate.offer), cluster=answer.cluster,
                     clusters=list(answer.clusters) or None)


def app_out(app: AppRead) -> AppOut:
    return AppOut(
        id=app.id,
        name=app.name,
        user=app.user,
        queue=app.queue,
        priority=app.priority,
        state=app.state.value,
        position=app.position,
        submitted_at=iso(app.submitted_at),
        started_at=iso(app.started_at),
        first_executor_at=iso(app.first_executor_at),
        finished_at=iso(app.finished_at),
        exit_code=app.exit_code,
        executors=app.executors,
        target=app.target,
        grant=app.grant,
        demand=app.demand,
        spark_app_id=app.spark_app_id,
        kind=app.kind,
        reason=app.reason,
        reason_code=app.reason_code,
        warnings=list(app.warnings),
        estimated_start=iso(app.estimated_start),
        counter_offer=offer_out(app.counter_offer),
        gang=gang_out(app),
        cluster=app.cluster,
    )
