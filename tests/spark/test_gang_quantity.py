"""A YuniKorn task group's minResource values, checked as Kubernetes reads a quantity and as a
pod's requests must be. Each case is a value in the task-groups JSON and what becomes of it:
accepted (OK), or refused with one line naming the property (FORM: not a quantity; NEGATIVE:
a quantity below zero, which pod validation refuses).

The grammar (apimachinery's resource.Quantity): <quantity> ::= <signedNumber><suffix>;
<signedNumber> ::= [+|-]<number>; <number> ::= digits | digits.digits | digits. | .digits;
<suffix> ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (n u m "" k M G T P E) | decimalExponent
(e|E then a signed whole number: the parser reads only digits after the exponent's sign).
"""

from __future__ import annotations

import json

import pytest

from sessionsched.model import Gang
from sessionsched.spark.gang_properties import TASK_GROUPS, gang_from_conf

OK, FORM, NEGATIVE = "ok", "expected a Kubernetes quantity like 1, 500m or 2Gi", "below zero"

# value as written in the JSON -> expected
STRINGS = {
    ".5": OK,  # .digits
    "+1": OK,  # a sign is part of <signedNumber>
    "1e-3": OK,  # decimalExponent with a signed exponent
    "1E3": OK,  # E with digits after it: an exponent
    "1.5e+3": OK,  # digits.digits, then an exponent with a +
    "1e03": OK,  # the exponent's digits may start with 0
    "1.": OK,  # digits.
    "1.G": OK,  # digits. then decimalSI (Kubernetes' own tests parse it)
    "0.5Gi": OK,  # a fraction with a binary suffix
    "1Ki": OK,  # binarySI
    "1Ei": OK,  # the largest binary suffix
    "1E": OK,  # E alone is decimalSI (exa), not an exponent
    "500m": OK,  # decimalSI milli
    "1n": OK,  # decimalSI nano
    "2u": OK,  # decimalSI micro
    "3k": OK,  # decimalSI kilo
    "007": OK,  # leading zeros are digits
    "0": OK,  # zero
    "-0": OK,  # zero with a sign is zero: not below it
    "-0.0Gi": OK,  # still zero
    " 1Gi ": OK,  # Quantity.UnmarshalJSON trims the JSON string (Go's strings.TrimSpace)
    "1Gi\u00a0": OK,  # a no-break space is Unicode White_Space, trimmed by TrimSpace too
    "": FORM,  # no number
    "1 Gi": FORM,  # nothing may stand between the number and its suffix
    "Gi": FORM,  # a suffix without a number
    ".": FORM,  # <number> needs a digit
    "+": FORM,  # a sign without a number
    "e3": FORM,  # an exponent without a number
    "1e": FORM,  # e needs digits after it (and e alone is no decimalSI suffix)
    "1e+": FORM,  # a signed exponent needs digits
    "1ee3": FORM,  # one e
    "1e1.5": FORM,  # the exponent is a whole number
    "1e3k": FORM,  # one suffix
    "1.2.3": FORM,  # one decimal point
    "0x10": FORM,  # no hexadecimal
    "1K": FORM,  # kilo is a lowercase k (K only in Ki)
    "1ki": FORM,  # no binary kilo in lowercase
    "1mi": FORM,  # m is milli; mi is no suffix
    "1i": FORM,  # i alone is no suffix
    "1Kib": FORM,  # nothing after the suffix
    "1_000": FORM,  # no digit separators
    "NaN": FORM,  # no special values
    "Infinity": FORM,  # no special values
    "1,5": FORM,  # no decimal comma
    "\u0661": FORM,  # ASCII digits only (Arabic-Indic one)
    "1\x1c": FORM,  # U+001C is not White_Space: Go's TrimSpace keeps it
    "1e9223372036854775807": OK,  # the largest exponent that fits in 64 bits
    "1e9223372036854775808": FORM,  # one beyond: Kubernetes cannot read the exponent
    "-1": NEGATIVE,  # well formed, but a pod's requests must not be below zero
    "-.5": NEGATIVE,  # well formed, below zero
    "-1e-9": NEGATIVE,  # tiny but below zero
    "-0.001m": NEGATIVE,  # below zero however small (Kubernetes rounds it away from zero)
}

# JSON values that are not strings: Quantity.UnmarshalJSON reads a number's own text
NUMBERS = {
    "1": OK,  # a JSON integer
    "0.5": OK,  # a JSON fraction
    "1e3": OK,  # a JSON number with an exponent
    "1e400": OK,  # too big for a float, a fine quantity (kept exact)
    "null": OK,  # Quantity.UnmarshalJSON reads null as zero
    "-2": NEGATIVE,  # a negative JSON number
    "-1e400": NEGATIVE,  # a negative one too big for a float
    "true": FORM,  # a JSON boolean is no quantity
    "[1]": FORM,  # nor a list
    '{"value": 1}': FORM,  # nor an object
}


def conf_with(value_json: str) -> dict[str, str]:
    groups = (
        '[{"name": "spark-executor", "minMember": 2, "minResource": {"memory": '
        + value_json
        + "}}]"
    )
    return {TASK_GROUPS: groups}


def check(value_json: str, expected: str) -> None:
    conf = conf_with(value_json)
    if expected == OK:
        assert gang_from_conf(conf) == Gang(2)
        return
    with pytest.raises(ValueError) as err:
        gang_from_conf(conf)
    message = str(err.value)
    assert message.startswith(f"{TASK_GROUPS} group 'spark-executor' minResource memory=")
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize("value,expected", STRINGS.items(), ids=[repr(v) for v in STRINGS])
def test_string_quantity(value, expected):
    check(json.dumps(value), expected)


@pytest.mark.parametrize("value_json,expected", NUMBERS.items(), ids=NUMBERS.keys())
def test_json_value_quantity(value_json, expected):
    check(value_json, expected)
