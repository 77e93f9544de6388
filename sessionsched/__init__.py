"""sessionsched: a session scheduler for Apache Spark."""

__version__ = "0.1.0"
