"""Geometry helpers over plain numbers and tuples."""

import math
import os

UNITS = {"mm": 0.001, "cm": 0.01, "m": 1.0}


def clamp(value, low, high):
    """Limit a value to the closed range from low to high.

    Args:
        value: The number to limit.
        low: The smallest allowed result.
        high: The largest allowed result.

    Returns:
        The value, or the nearest bound when it lies outside.

    Raises:
        ValueError: If low is greater than high.
    """
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value


def area(width, height=None):
    """Return the area of a rectangle, or of a square when height is None.

    Args:
        width: The length of one side.
        height: The length of the other side; the width when omitted.

    Returns:
        The product of the two sides.
    """
    if height is None:
        height = width
    return width * height


def perimeter(sides):
    """Add up the lengths of a polygon's sides.

    Args:
        sides: The side lengths.

    Returns:
        Their sum, or 0 for no sides.
    """
    total = 0
    for side in sides:
        if not isinstance(side, (int, float)):
            raise TypeError("sides must be numbers")
        total += side
    return total


def scale(points, factor, unit="m"):
    """Multiply every coordinate of the points by a factor in the given unit.

    Args:
        points: Pairs of coordinates.
        factor: How much to grow or shrink.
        unit: A key of UNITS.

    Returns:
        The scaled points as a list of tuples.
    """
    if unit not in UNITS:
        raise KeyError(unit)
    ratio = factor * UNITS[unit]
    return [(x * ratio, y * ratio) for x, y in points]


def distance(a, b):
    """Return the straight-line distance between two points.

    Args:
        a: The first point.
        b: The second point.

    Returns:
        The Euclidean distance.
    """
    return math.hypot(a[0] - b[0], a[1] - b[1])


def home_relative(path):
    """Shorten a path under the home directory to start with a tilde.

    Args:
        path: An absolute path.

    Returns:
        The path, with the home directory replaced by ``~`` when it starts with it.
    """
    home = os.path.expanduser("~")
    if path.startswith(home):
        return "~" + path[len(home) :]
    return path


def at_most(values, limit=math.inf):
    """Keep the numbers that do not exceed a limit.

    Args:
        values: The numbers.
        limit: The largest number kept; no limit when omitted.

    Returns:
        The numbers at most the limit, in their order.
    """
    return [value for value in values if value <= limit]
