"""What every door shares below its protocol: ASGI plumbing (``asgi``), the request's
sender (``requests``) and a body read as JSON (``bodies``)."""
