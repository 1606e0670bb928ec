"""The occupations the job rules know (English and Chinese), for the copula: "I'm a nurse", "I became a nurse",
"我是护士"; and what "I joined X" names that is no employer (:func:`joined_employer`).

"I'm a …" says many things that are no job ("I'm a big fan of jazz", "I'm a morning person", "I'm a mother of two",
"I'm a member of the club", "I'm a vegetarian"), so a job read from "I am / I'm / I became a X" (and "我是X",
"我当X") is written only when X ends with an occupation of :data:`OCCUPATIONS` (:data:`ZH_OCCUPATIONS`), with at
most three words before it and none of :data:`NOT_A_JOB` ("a terrible cook", "a retired teacher", "an aspiring
writer"). The explicit phrasings ("I work as a X", "a job as a X", "I work at Y as a X", "我的工作是X") need no list.

No package was taken for the list: ``find-job-titles`` (PyPI, last release 0.7.0 in 2017) finds any of 77k titles
anywhere in a string, with the C library acora and ~20 s to build its dictionary (its README); a short list that
leaves out the words of "I'm a …" that are no job is what this rule needs.
"""

from __future__ import annotations

import re

from timem.memory.first_names import is_first_name

#: occupations (a head noun or a fixed title); "software engineer", "registered nurse" end with one of them
OCCUPATIONS = frozenset("""
accountant actor actress administrator analyst anesthesiologist architect artist assistant attorney auditor
baker banker barber barista bartender biologist bookkeeper broker builder butcher caregiver carer carpenter
cashier ceo cfo chef chemist chiropractor cleaner clerk coach comedian consultant cook copywriter counselor
counsellor courier cto dentist designer developer dietitian dietician director dispatcher doctor economist
editor electrician engineer entrepreneur farmer firefighter florist founder co-founder freelancer geologist
hairdresser housekeeper hygienist illustrator intern janitor jeweler jeweller journalist judge lawyer lecturer
librarian lifeguard machinist manager marketer mechanic midwife miner musician nanny nurse optician optometrist
painter paralegal paramedic pediatrician pharmacist photographer physician physicist physio physiotherapist pilot
plumber policeman policewoman postman principal producer professor programmer psychiatrist psychologist
radiologist realtor receptionist recruiter reporter researcher salesman saleswoman scientist secretary singer
soldier sommelier surgeon surveyor tailor teacher technician therapist trader translator tutor vet
veterinarian waiter waitress welder writer
""".split()) | frozenset({
    "bus driver", "truck driver", "taxi driver", "delivery driver", "flight attendant", "police officer",
    "social worker", "care worker", "construction worker", "factory worker", "security guard", "estate agent",
    "real estate agent", "travel agent", "insurance agent", "nurse practitioner", "web developer", "dj",
})
#: words before an occupation that make it no job of the speaker: judgements ("a terrible cook"), pastimes
#: ("an amateur photographer", "a keen gardener"), and another time ("a retired teacher", "a future doctor")
NOT_A_JOB = frozenset("""
good bad great terrible awful horrible lousy decent pretty better best worse worst big huge massive avid keen
amateur hobby weekend home natural born real total complete proper slow fast quick careful nervous picky messy
hopeless budding aspiring wannabe would-be future former ex ex- retired failed frustrated closet armchair backseat
self-taught passionate enthusiastic casual occasional regular frequent little fan of and or the my your
""".split())
#: Chinese occupations (longest first, so 产品经理 wins over 经理)
ZH_OCCUPATIONS = sorted("""
护士 医生 大夫 老师 教师 教授 工程师 软件工程师 程序员 律师 会计 会计师
设计师 记者 编辑 警察 厨师 司机 产品经理 项目经理 经理 销售 公务员 服务员
演员 歌手 画家 作家 翻译 摄影师 理发师 药剂师 建筑师 科学家 研究员 分析师
咨询师 心理咨询师 健身教练 教练 农民 工人 快递员 外卖员 保安 主播 店长 老板
创业者 自由职业者 兽医 牙医 飞行员 空姐 导游 秘书 前台 实习生 物理治疗师
康复师 幼师 数据分析师 数据科学家
""".split(), key=len, reverse=True)
ZH_OCCUPATION = "(?P<job>" + "|".join(re.escape(o) for o in ZH_OCCUPATIONS) + ")"


def occupation(phrase: str) -> str | None:
    """The job ``phrase`` names ("registered nurse", "nurse", "software engineer"), or ``None`` when it names
    none: it must end with an occupation of :data:`OCCUPATIONS` (or be one of :data:`ZH_OCCUPATIONS`), with at most
    three words before it, none of them in :data:`NOT_A_JOB`. A leading "new" is dropped ("a new nurse": nurse)."""
    p = " ".join(phrase.strip().split())
    if p in ZH_OCCUPATIONS:
        return p
    words = p.lower().split()
    if words[:1] == ["new"]:
        words, p = words[1:], " ".join(p.split()[1:])
    if not words or any(w in NOT_A_JOB for w in words):
        return None
    for n in (3, 2, 1):
        if len(words) >= n and " ".join(words[-n:]) in OCCUPATIONS and len(words) - n <= 3:
            return p
    return None


#: words of a name that make what one joins no employer: clubs, gyms, groups, teams, parties, classes ("I joined the
#: Sierra Club", "I joined Gold's gym", "I joined the Oxford Union", "I joined Chelsea FC")
NOT_EMPLOYER_WORDS = frozenset("""
club clubs gym fitness choir chorus league society group church congregation union association party community band
orchestra ensemble chapter fraternity sorority fc scouts guides brownies cubs anonymous server channel forum subreddit
movement circle crew squad troupe class course waitlist challenge pta
""".split())
#: services, networks and clubs that one joins as a member or a user, not as an employee ("I joined Facebook",
#: "I joined Strava"); with "as a X" the job says it is one ("I joined Facebook as an engineer")
SIGN_UPS = frozenset("""
facebook instagram twitter tiktok reddit discord slack zoom teams strava tinder bumble hinge grindr netflix spotify
linkedin whatsapp telegram signal snapchat pinterest youtube twitch duolingo peloton mastodon bluesky threads meetup
nextdoor patreon github goodreads letterboxd substack medium quora tumblr clubhouse costco audible classpass
headspace noom rotary toastmasters mensa ymca crossfit orangetheory soulcycle weight watchers ww parkrun
""".split()) | frozenset({"weight watchers", "amazon prime", "planet fitness"})


_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
#: what may follow "I joined X (as a Y)" for X to be an employer (a regex lookahead): the sentence's end or a time
#: ("last month", "in March", "two weeks ago", "after graduating"); not "for lunch", "at the pub", "on a hike", "and
#: Tom", which a person one joins takes
JOINED_END = (r"(?=\s*(?:[,.!?;:]|$)|\s+(?:last|this|recently|yesterday|today|earlier|back|after|now|full-time"
              r"|part-time|in\s+(?:" + _MONTH + r"|\d{4}|spring|summer|autumn|fall|winter)|(?:\d+|a|an|one|two|three"
              r"|four|five|six|a\s+few|several)\s+(?:days?|weeks?|months?|years?)\s+ago)\b)")


def joined_employer(name: str, job: str | None = None) -> str | None:
    """The employer that "I joined ``name``" names, or ``None`` when it names none: a club, a gym, a group or a
    team (a word of :data:`NOT_EMPLOYER_WORDS`), a service one signs up to (:data:`SIGN_UPS`) or a person's first
    name alone ("I joined Sarah.", "I joined Sarah's team": :mod:`timem.memory.first_names`), unless ``job`` (the
    occupation of "… as a X") says it is a workplace (not of a person's team: "Sarah's team as a designer"). A name
    ends at a possessive that a name or a part of a company follows ("Google's London office", "Google's cloud team":
    Google; "St John's hospital" stays), and before a part of a company in lower case ("the Google cloud team":
    Google)."""
    words = name.split()
    lower = [w.lower().rstrip(".") for w in words]
    if not words or any(w in NOT_EMPLOYER_WORDS for w in lower):
        return None
    if job is None and (" ".join(lower) in SIGN_UPS or lower[0] in SIGN_UPS):
        return None
    whose = False  # a part of someone's: "Sarah's team" is Sarah's, even with a job ("… as a designer")
    for k, w in enumerate(words[:-1]):
        rest = words[k + 1:]
        if re.search(r"['’]s$", w) and any(r[:1].isupper() or r.lower() in _PARTS for r in rest):
            words, whose = [*words[:k], w[:-2]], True
            break
    else:
        if lower[-1] in _PARTS:  # "the Google cloud team": Google
            while len(words) > 1 and words[-1][:1].islower():
                words.pop()
    if (job is None or whose) and len(words) == 1 and is_first_name(words[0]):  # "I joined Sarah.": a person
        return None
    return " ".join(words)


#: parts of a company after its possessive name ("Google's cloud team")
_PARTS = frozenset({"team", "office", "division", "department", "lab"})
