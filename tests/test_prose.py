"""Numbers as the text writes them (attnsink.prose): a range never reads "0.00 to 0.00"."""

import pytest


def test_span_never_writes_a_range_of_zeros():
    from attnsink.prose import span

    assert span([0.12, 0.34]) == "0.12 to 0.34"
    assert span([0.121, 0.119]) == "0.12"
    assert span([0.001, 0.002]) == "under 0.005"
    assert span([0.0, 0.002]) == "0.00 to under 0.005"
    assert span([0.001, 0.3]) == "under 0.005 to 0.30"
    assert span([-0.2, 0.1], digits=1) == "\u22120.2 to 0.1"
    assert span([-0.001, 0.001]) == "between \u22120.005 and 0 to under 0.005"
    with pytest.raises(ValueError, match="at least one"):
        span([])


def test_bound_rounds_to_the_safe_side():
    from attnsink.prose import bound, readable

    assert bound(0.01692, "down") == 0.016 and readable(bound(0.01692, "down")) == "0.016"
    assert bound(0.01692, "up") == 0.017
    assert bound(4.27e-4, "down") == 4.2e-4 and bound(4.27e-4, "up") == 4.3e-4
    assert bound(0.9976, "down", 3) == 0.997 and bound(0.29, "down") == 0.29
    assert bound(-0.0123, "down") == -0.013  # down is towards minus infinity
    assert bound(0.0, "up") == 0.0
    with pytest.raises(ValueError, match="side"):
        bound(0.5, "nearest")
    with pytest.raises(ValueError, match="digits"):
        bound(0.5, "up", 0)


def test_readable_never_prints_five_decimals():
    from attnsink.prose import readable

    assert readable(0.00257, 3) == "2.57 × 10⁻³"  # not '0.00257', which reads as a raw number
    assert readable(0.00257) == "0.0026" and readable(0.0123, 3) == "0.0123"
    assert readable(3.2e-5) == "3.2 × 10⁻⁵" and readable(0.9987) == "0.999"
    assert readable(0.00257, 3, toward="up") == "2.57 × 10⁻³"


def test_readable_keeps_numbers_near_one_in_decimals():
    from attnsink.prose import readable

    assert "×" not in readable(0.9999999, 3, toward="down")  # its figures grow near 1, not its scale
