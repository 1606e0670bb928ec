"""Whether a word is a person's first name, for "I joined X" (:func:`timem.memory.occupations.joined_employer`): "I
joined Sarah." is a person one joins, not an employer (a helper's trial read employer Sarah).

The names are the English first names of Faker's person providers (``faker.providers.person`` for en_US, en_GB, en_IE
and en_NZ: 1,364 names, "Sarah", "Tom", "Ben", "Caroline"), taken over a list of our own: Faker is kept up (monthly
releases, MIT). Its larger ``en`` list (7,203 names of US birth records) holds company names too ("Meta", "Ford",
"Dell", "Hilton", "Stanford"), so it is not used. A few names of the four are also brands ("Chase", "Mercedes",
"Morgan", "Zara", "Tiffany", "Levi"): a lone "I joined Chase." reads no employer; "I joined Chase as an analyst" or
"I joined JPMorgan Chase" still does.
"""

from __future__ import annotations

import importlib
from functools import cache

#: the Faker person providers whose first names count
LOCALES = ("en_US", "en_GB", "en_IE", "en_NZ")


@cache
def _first_names() -> frozenset[str]:
    """Every first name of :data:`LOCALES`, folded (loaded once, on the first "I joined X")."""
    names: set[str] = set()
    for locale in LOCALES:
        names.update(importlib.import_module(f"faker.providers.person.{locale}").Provider.first_names)
    return frozenset(n.casefold() for n in names)


def is_first_name(word: str) -> bool:
    """Whether ``word`` (one word, any case, a full stop after it or not) is a first name of :data:`LOCALES`:
    ``"Sarah"``, ``"Tom."``; not ``"Google"``, ``"NHS"``."""
    return word.strip().rstrip(".").casefold() in _first_names()
