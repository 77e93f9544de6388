"""What admission may spend this cycle (``admission.Room``), built from the books: its
per-queue figures kept from one cycle to the next (``keeper``)."""

from .keeper import RoomKeeper

__all__ = ["RoomKeeper"]
