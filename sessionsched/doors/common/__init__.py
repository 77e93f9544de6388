"""What every door shares below its protocol: ASGI plumbing (``asgi``) and the request's
sender (``requests``)."""
