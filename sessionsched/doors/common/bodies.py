"""A request body read as JSON by the doors that parse their own (Spark's REST protocol,
Livy's): ``json_body`` gives the value, or a ``ValueError`` whose one line says why the body is
not JSON the scheduler can keep, for the door to word in its own error shape.

Python's parser takes more than the scheduler can keep: a ``\\ud800`` escape is read as a lone
surrogate, which no UTF-8 answer, store row or driver argument can hold (its first answer or
write fails, after the request was acted on); those bodies are refused here, before anything
is done with them."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# A \u escape of a surrogate (D800-DFFF): a pair makes one character, a lone one cannot.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def json_body(raw: bytes) -> Any:
    try:
        body = json.loads(raw)
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 (byte 0x{e.object[e.start]:02x} at position "
                         f"{e.start})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # int()'s limit on the digits of a number
        raise ValueError(f"a number of more than {sys.get_int_max_str_digits()} "
                         "digits") from None
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(body, ensure_ascii=False).encode()
        except UnicodeEncodeError as e:
            raise ValueError(f"a lone surrogate {e.object[e.start]!r} is not Unicode "
                             "text") from None
    return body
