"""Gangs in the engine: reservation that accumulates (docs/design/gangs.md)."""

from .reservation import Reservation

__all__ = ["Reservation"]
