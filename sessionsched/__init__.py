"""sessionsched: a session scheduler for Apache Spark."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # ``sessionsched.session`` is loaded on first use: importing the package (as the driver
    # agent does) must not pull in the notebook API's dependencies.
    if name == "session":
        from .drivers.notebook import session

        return session
    raise AttributeError(f"module 'sessionsched' has no attribute {name!r}")
