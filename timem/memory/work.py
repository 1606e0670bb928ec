"""Where the speaker works and as what, for :mod:`timem.memory.rules`: the employer and the job (English and Chinese).

* employer / job -- "I work at Acme as a designer", "I started a new job at X", "I started working as a nurse", "I work
  at the hospital as a nurse" (the job only: a place in lower case names no employer), "I joined Google (last month)"
  (not "I joined a gym / the choir / Strava / Sarah for lunch"), "我现在在腾讯工作", "我在医院当护士"; the copula only
  for an occupation of :mod:`timem.memory.occupations`: "I'm a nurse (at X)", "I became a nurse", "我是护士",
  "我开始当护士了" (not "I'm a morning person", 我是上海人); a business of one's own: "I started my own online
  clothing store", "I run a small bakery" (the employer "own online clothing store", "small bakery");
* the end of one -- "I quit Google", "I left Google", "I don't work at Google anymore", "I got fired from Google"
  (the employer), "I lost my job as a banker" (the job).

:func:`read_work` reads one sentence.
"""

from __future__ import annotations

import re
from typing import Any

from timem.memory.drinks import named_pattern as _p
from timem.memory.occupations import JOINED_END, ZH_OCCUPATION, joined_employer, occupation
from timem.memory.patterns import END, END_CAP, GONE, JOB, ZH_END, ZH_VAL, cap, clean
from timem.memory.places import is_place

_AS_JOB = r"(?:\s+(?i:as)\s+(?:(?i:an?)\s+)?" + JOB + ")?"
#: an employer's name with the kind of place it is in lower case: "Santa Maria hospital" (a trial kept "Santa Maria"),
#: after "the" or not: "the NHS", "the BBC" (a helper's trial: "I work for the NHS" read nothing)
_EMP = r"(?:(?i:the)\s+)?" + cap("emp")[:-1] + (
    r"(?:\s+(?i:hospital|clinic|school|university|college|bakery|caf[eé]|restaurant|bank|library|hotel|museum|"
    r"pharmacy|gym|studio|agency|bar|shop|store|office))?)")
_AT_EMP = r"(?:\s+(?i:at|with|for)\s+" + _EMP + END_CAP + "|" + END + ")"
#: where one works, named by a kind of place in lower case: "the hospital", "a small bakery", "our local school". No
#: employer (it names none); only before "as a X", which names the job: "I work at the hospital as a nurse" (a second
#: new-user trial read nothing)
_PLACE_AS = (r"(?i:at|for|in)\s+(?i:the|a|an|our|my|this|that)\s+[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3}?"
             r"(?=\s+(?i:as)\s+(?i:an?)\s)")
#: who works: the speaker, also with others ("My wife and I (both) work for the NHS", "We both work for the NHS"; a
#: helper's trial read nothing); a plain "we work at X" may be a firm's voice ("we work with / for clients") and is not
#: read
_WHO = r"\b(?:[Ii]|[Ww]e(?=\s+(?i:both|all)\b))\s+(?:(?i:both|all)\s+)?"
#: how one works there, between "work" and "at / for": "I now work remotely for Spotify" (a helper's trial read nothing)
_HOW = r"(?:(?i:remotely|remote|full-time|full\s+time|part-time|part\s+time|freelance|from\s+home)\s+)?"
_SOON = r"(?:(?i:now|just|recently|currently|still|also|officially|finally|been|started|start|began|begun)\s+)*"
#: (pattern, whether its job must be an occupation of :mod:`timem.memory.occupations`): the copula ("I'm a X",
#: "I became a X") says many things that are no job ("I'm a big fan of jazz"); "work as a X" names a job
_WORK = [(re.compile(_WHO + r"(?i:now\s+|currently\s+|still\s+)?(?i:work)\s+" + _HOW + r"(?:(?i:at|for)\s+" + _EMP + "|"
                     + _PLACE_AS + ")" + _AS_JOB + END), False),
         (re.compile(r"\b[Ii]\s+(?i:just\s+|recently\s+)?(?i:started|got|took)\s+(?i:a\s+new\s+job|a\s+job|working|"
                     r"a\s+position)\s+(?:(?i:at|with|for)\s+" + _EMP + "|" + _PLACE_AS + ")" + _AS_JOB + END), False),
         # "I just started at Google", "I've recently started work at Acme (as a X)": a new employer (it read
         # nothing); "just" or "recently" needed, as "I started at 9" or "I started at Level 3" name none
         (re.compile(r"\b[Ii](?i:'ve|’ve|\s+have)?\s+(?i:just|recently)\s+(?i:started)\s+(?:(?i:work|a\s+new\s+job)\s+)?"
                     r"(?i:at|with)\s+" + _EMP + END_CAP + _AS_JOB + END), False),
         # "I'm a nurse (now)", "I'm now a nurse at St Mary's (hospital)", "I am also a registered nurse"
         (re.compile(r"\b[Ii](?i:'m|’m|\s+am)\s+" + _SOON + r"(?i:an?\s+)" + JOB + _AT_EMP), True),
         # "I became a nurse", "I've (just) become a nurse", "I got hired as a nurse", "I qualified as a nurse"
         (re.compile(r"\b[Ii](?i:'ve|’ve|\s+have)?\s+" + _SOON + r"(?i:became|become|qualified\s+as|got\s+hired\s+as|"
                     r"was\s+hired\s+as)\s+(?i:an?\s+)" + JOB + _AT_EMP), True),
         # "I work as a nurse", "I started working as a nurse last week", "I've been working as a nurse since May",
         # "now I freelance as a photographer", "I work there as a baker" (a new-user trial read nothing); not "I used
         # to work as …", "I don't work as … anymore"
         (re.compile(r"\b[Ii](?i:'ve|’ve|\s+have|'m|’m|\s+am)?\s+" + _SOON + r"(?i:work|working|freelance|freelancing)"
                     r"(?:\s+(?i:there|here))?\s+(?i:as)\s+(?i:an?\s+)" + JOB + _AT_EMP), False)]
#: "I joined Google", "I've just joined Acme as a designer", "I joined Google last month / in March / two weeks ago",
#: "I joined Google's cloud team": a new employer, as "I just started at Google" (a trial read nothing); only a time,
#: "as a X" or the sentence's end may follow the name (:data:`~timem.memory.occupations.JOINED_END`: "I joined Sarah
#: for lunch" names none), and no club, gym or service one signs up to
#: (:func:`~timem.memory.occupations.joined_employer`)
_JOINED = re.compile(r"\b[Ii](?i:'ve|’ve|\s+have)?\s+(?i:just\s+|recently\s+|finally\s+|officially\s+)?(?i:joined)\s+"
                     + _EMP + END_CAP + r"(?P<part>(?:\s+[a-z][\w-]*){0,3}?\s+"
                     r"(?i:team|office|division|department|lab))?" + _AS_JOB + JOINED_END)
#: a business of the speaker's own, said as started or run: "I started my own online clothing store", "I opened an
#: online clothing store", "I run a small bakery" (LoCoMo dev: Gina's store read nothing; "I love running my own
#: studio" says what one loves, and the labelled set has no item for it). The employer is the business as named, with
#: "own" when said ("own online clothing store": the speaker is their own boss). Not a wish or plan ("I wanna start
#: my own business", "I'm gonna open a café"), nor one one works in ("I opened the store this morning": "the" or a bare
#: "my"), nor "a bank account", "a bar tab"
BUSINESSES = (r"business|company|firm|start-?up|store|shop|boutique|studio|bakery|caf[eé]|restaurant|bar|salon|agency|"
              r"consultancy|label")
_OWN_BUSINESS = re.compile(
    r"\b[Ii](?:(?:'ve|’ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|officially\s+)?"
    r"(?i:started|opened|launched|founded|set\s+up|started\s+up)\s+(?P<own>(?i:my\s+own|my\s+very\s+own)\s+)?"
    r"|(?i:'m|’m|\s+am)?\s+(?:(?i:now|still|currently)\s+)?"
    r"(?i:run|running|own|owning)\s+(?P<own2>(?i:my\s+own|my\s+very\s+own)\s+)?)"
    r"(?(own)|(?(own2)|(?i:an?|my\s+new|my\s+first)\s+))(?:(?i:new|first|small|little)\s+)?"
    r"(?P<emp>(?:[a-z][\w'’-]*\s+){0,3}?(?i:" + BUSINESSES + r"))(?![\w'’-])"
    # the business ends the noun phrase: not "a bank account", "a bar tab", "a shop window"
    r"(?:" + END + r"|(?=\s+(?i:not|ago|about|called|named|of\s+my\s+own|online|downtown|here|there|back|"
    r"yesterday|today|which|that|where|from)\b))")
#: a business named by no more than that, which says nothing of it unless it is the speaker's own: "I started a
#: company" (no employer), "I started my own company" ("own company")
_ANY_BUSINESS = frozenset({"business", "company", "firm", "startup", "start-up"})
_LATER_AS = re.compile(r"\bas\s+an?\s+" + JOB + END, re.IGNORECASE)
_JOB_AS = re.compile(r"\b(?:a\s+|my\s+)?(?:new\s+)?job\s+as\s+(?:an?\s+)" + JOB + END, re.IGNORECASE)
#: "(I) lost / quit / left my job as a banker": ends that job, and says it was the job (``held``: history when no item
#: held it, as "I quit my job at Google" for the employer; LoCoMo's "Lost my job as a banker yesterday" wrote nothing)
_JOB_LOST = re.compile(r"\b(?:lost|quit|left)\s+my\s+job\s+as\s+(?:an?\s+)" + JOB + END, re.IGNORECASE)
#: an employer said to be over, ``(pattern, held, place)``: "I quit Google", "I left Google (last month)" (not a place:
#: "I left Madrid" is no job), "I resigned from Google", "I don't work at Google anymore", "I no longer work for
#: Google", "I stopped working at Google" (a new-user trial left Google the employer). ``held``: the words say Google
#: was the employer, so it is history when no item held it; "quit" and "left" name too many other things ("I quit
#: Instagram")
_OVER_SOON = r"(?i:'ve|\s+have)?\s+(?i:just\s+|finally\s+|recently\s+)?"
#: ``place``: the words also name a place, so a name of the gazetteer is no employer ("I left Madrid", "I'm no longer
#: at Lisbon airport"). A third trial ended nothing for "I'm no longer at Google", "I got fired from Google", "I quit my
#: job at Google": they end the employer too (the last two say it was one)
_EMPLOYER_OVER = [
    (re.compile(r"\b[Ii]" + _OVER_SOON + r"(?i:quit|left)\s+" + _EMP + END_CAP), False, True),
    (re.compile(r"\b[Ii]" + _OVER_SOON + r"(?i:resigned\s+from|stopped\s+working\s+(?:at|for))\s+" + _EMP + END_CAP),
     True, False),
    (re.compile(r"\b[Ii]\s+(?i:don't|do\s+not)\s+(?i:work)\s+(?i:at|for)\s+" + _EMP + END_CAP + GONE), True, False),
    (re.compile(r"\b[Ii](?i:'m|\s+am)?\s+(?i:no\s+longer)\s+(?i:work|working)\s+(?i:at|for)\s+" + _EMP + END_CAP),
     True, False),
    # "I quit / left / lost my job at Google"
    (re.compile(r"\b[Ii]" + _OVER_SOON + r"(?i:quit|left|lost)\s+(?i:my)\s+(?i:job|position|role)\s+(?i:at|with)\s+"
                + _EMP + END_CAP), True, False),
    # "I got fired from Google", "I was laid off by Google", "I've been let go from Google"
    (re.compile(r"\b[Ii](?i:'ve|\s+have)?\s+(?i:just\s+|recently\s+)?(?i:got|was|been|get)\s+"
                r"(?i:fired|sacked|laid\s+off|let\s+go)\s+(?i:from|by|at)\s+" + _EMP + END_CAP), True, False),
    # "I'm no longer at Google", "I'm not with Google anymore" (not a place: "I'm no longer at Heathrow")
    (re.compile(r"\b[Ii](?i:'m|’m|\s+am)\s+(?i:no\s+longer)\s+(?i:at|with)\s+" + _EMP + END_CAP), False, True),
    (re.compile(r"\b[Ii](?i:'m|’m|\s+am)\s+(?i:not)\s+(?i:at|with)\s+" + _EMP + END_CAP + GONE), False, True)]
_ZH_WORK_JOB = _p(r"我(?:现在|目前)?在{emp}(?:当|做|担任)(?:一名|一个)?{job}" + ZH_END, emp=ZH_VAL, job=ZH_VAL)
_ZH_WORK = _p(r"我(?:现在|目前|如今)?在{emp}(?:工作|上班)" + ZH_END, emp=ZH_VAL)
_ZH_JOB = _p(r"我的(?:工作|职业)是{job}" + ZH_END, job=ZH_VAL)
#: 我是护士, 我现在是一名护士, 我成了一名医生, 我开始当护士了: an occupation of
#: :data:`timem.memory.occupations.ZH_OCCUPATIONS` only (我是上海人 is none)
_ZH_BE_JOB = re.compile(r"我(?:现在|目前|如今|已经|最近|终于)?(?:是|成了|成为了?|当上了?|(?:开始|正式)?(?:当|做)了?)"
                        r"(?:一名|一个|一位|个|名)?" + ZH_OCCUPATION + ZH_END)
def _later_job(s: str, pos: int) -> str | None:
    """The occupation of an "as a X" in ``s`` after ``pos``, past a time or other words: "I joined Google yesterday,
    officially, as a product manager" (a helper's trial read the employer and no job, so the old job stayed open);
    ``None`` when there is none or X is no occupation of :mod:`timem.memory.occupations` ("as a surprise")."""
    m = _LATER_AS.search(s, pos)
    return m["job"] if m and occupation(m["job"]) else None


def read_work(s: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The employer and job statements of the sentence ``s``, in this order: an employer that ends, a new employer
    and job, a job that ends, then the Chinese ones. Each is ``(attribute, value, fields)``: ``attribute`` is
    ``"employer"`` or ``"job"``, ``value`` as written (the rules clean it), ``fields`` the
    :class:`timem.memory.rules.Statement` fields beyond the value (``replaces``, ``ends_only``, ``held``); ``[]`` for
    none."""
    out: list[tuple[str, str, dict[str, Any]]] = []

    def has_job() -> bool:
        return any(a == "job" and clean(v) for a, v, _ in out)

    for rx, held, a_place in _EMPLOYER_OVER:  # "I quit Google" ends the employer (not the job: it outlives it)
        if (m := rx.search(s)) and not (a_place and is_place(clean(m["emp"]))):
            out.append(("employer", m["emp"], {"replaces": clean(m["emp"]), "ends_only": True, "held": held}))
            break
    for rx, listed in _WORK:
        if (m := rx.search(s)) and not (listed and occupation(m["job"]) is None):
            if m.groupdict().get("emp"):
                out.append(("employer", m["emp"], {}))
            if m.groupdict().get("job"):
                out.append(("job", occupation(m["job"]) or m["job"], {}))
            break
    else:  # "I joined Google (as a designer)": a new employer, not "I joined a gym / the Sierra Club / Strava"
        if m := _JOINED.search(s):
            job = m["job"] or _later_job(s, m.end())
            if emp := joined_employer(m["emp"] + (m["part"] or ""), job):
                out.append(("employer", emp, {}))
                if job:
                    out.append(("job", occupation(job) or job, {}))
    if not any(a == "employer" for a, _, _ in out) and (m := _OWN_BUSINESS.search(s)) and (
            m["own"] or m["own2"] or m["emp"].lower() not in _ANY_BUSINESS):  # "I opened a bakery"
        out.append(("employer", ("own " if m["own"] or m["own2"] else "") + m["emp"], {}))
    if m := _JOB_LOST.search(s):  # "lost my job as a banker": ends that job
        out.append(("job", m["job"], {"replaces": m["job"].lower(), "ends_only": True, "held": True}))
    elif not has_job() and re.search(r"\bI\b", s) and (m := _JOB_AS.search(s)):
        out.append(("job", m["job"], {}))
    if m := _ZH_WORK_JOB.search(s):
        out += [("employer", m["emp"], {}), ("job", m["job"], {})]
    elif m := _ZH_WORK.search(s):
        out.append(("employer", m["emp"], {}))
    if m := _ZH_JOB.search(s):
        out.append(("job", m["job"], {}))
    elif not has_job() and (m := _ZH_BE_JOB.search(s)):  # 我是护士, 我开始当护士了
        out.append(("job", m["job"], {}))
    return out
