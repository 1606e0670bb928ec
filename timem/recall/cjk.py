"""Recall's Chinese path: content words, the BM25 query, the relevance floor, acknowledgements, complexity.

Issue 27 #3 / #10: for 我的狗叫什么名字？ over 42 Chinese memories the context was 45 lines (its English twin: 4),
because three English-only parts of recall saw Chinese as noise:

* :func:`timem.recall.keywords.extract_keywords` read only ASCII words, so a Chinese question had no keywords,
  and its BM25 query (the question itself) matched every memory on 我 and 的;
* the score gate's cosine floor (0.25) assumes an English embedder: MiniLM's cosine between unrelated Chinese
  sentences is 0.38-0.66 (median 0.56 for that question; English twin: median 0.14), so every leaf passed it;
* the next-turn neighbour of each kept leaf was the assistant's 好的，我记住了。, which says nothing.

The BM25 query splits two-character words into their characters too (:func:`bm25_terms`), and the score gate took
a match on one of them for a keyword match: 我在哪所大学读书？ kept 我最近在学中文 on 学 of 大学. Such a match counts
only when the word is one jieba could as well have cut in two (:func:`is_loose`: 狗叫 of 我的狗叫什么名字？, whose
叫 finds the dog); the other characters are :func:`part_characters`.

Here a question is **Chinese** when it holds a Han character and no kana or Hangul (:func:`is_chinese`; mixed
"Caroline 什么时候去的支持小组？" counts). Nothing in this module changes a question or a memory without a Han
character, so English recall is unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from timem.config import Complexity
from timem.store.segmenter import jieba_words, word_log_probability

#: function words, pronouns, question words, time words and fillers of Chinese questions (not content)
_STOP_TEXT = """
关于 我 你 他 她 它 我们 你们 他们 她们 它们 自己 的 地 得 了 着 过 是 不是 在 有 没有 没 和 跟 与 及 或 或者 还是
吗 呢 吧 啊 呀 哦 嘛 么 什么 怎么 怎样 怎么样 为什么 为何 哪 哪个 哪些 哪里 哪儿 哪天 几 多少 谁 何时 如何 什么样
这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 一个 一下 一些 一点 个 把 被 给 对 从 到 向 往 就 都 也 还 又 再
很 太 最 更 非常 比较 已经 曾经 正在 会 能 可以 要 想 应该 请 告诉 说 说过 提到 提过 知道 记得 问 所以 因为 但是
今天 昨天 明天 前天 后天 现在 以前 之前 以后 之后 时候 时间 最近 当时 那时 上周 下周 本周 这周 上个月 下个月
这个月 今年 去年 明年 早上 上午 中午 下午 晚上 周末 星期 礼拜 一直 经常 通常 平时 总是 有时 然后 后来 其实
"""
CJK_STOPWORDS = frozenset(_STOP_TEXT.split())
#: the time words among them that name a part of the week or of the day (周末 weekend, 晚上 evening ...): a memory
#: may say them as they are (这个周末我去爬山了), so they are a question's keywords when it names no time window the
#: time channel resolves (我周末做了什么？; :func:`time_nouns`, :func:`timem.recall.planner.make_plan`)
TIME_NOUNS = frozenset("周末 早上 上午 中午 下午 晚上".split())
#: the words of a reply that only acknowledges ("好的，我记住了。", "收到，谢谢！")
_ACK_TEXT = "好 好的 好啊 好吧 嗯 嗯嗯 行 可以 没问题 收到 记住 记下 记下来 知道 明白 了解 谢谢 感谢 不客气 放心 当然"
_ACK_WORDS = frozenset(_ACK_TEXT.split())

#: measure words: after 哪 or 几 (哪所大学, 几只猫) they count nothing
_MEASURE_WORDS = frozenset("所 家 位 本 只 条 种 辆 件 个 次 张 首 部 台 间 座 把 双 块 门 支 份".split())
#: a two-character word of a question is "loose" when jieba's dictionary makes it less than e^2 (about 7) times as
#: likely as its two characters as words of their own (:func:`is_loose`): 狗叫 "bark" 0.09 and 猫叫 0.78 (in 我的狗叫
#: 什么名字？ the words are 狗 / 叫), 去过 1.0; real words are above, e.g. 生日 3.6, 中文 3.7, 大学 6.2, 名字 6.4
LOOSE_WORD_MARGIN = 2.0

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA_HANGUL = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f]")
_SPEAKER = re.compile(r"^[^:：\n]{1,60}[:：]\s*")
_ASCII_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")

#: complexity cues of Chinese questions (:func:`complexity`): the first class whose cue occurs wins
_COMPLEX = re.compile("为什么|为何|原因|怎么样|如何|总结|概括|哪些|所有|变化|改变|比较|关系|影响|"
                      "一共|总共|几次|多少次|经历|发展|有什么不同|区别")
_HYBRID = re.compile("什么时候|何时|哪天|哪一天|几点|几号|几月|多久|多长时间|之前|之后|以前|以后|最近|上周|上个月|去年|"
                     "昨天|前天|那天|日期|星期几|礼拜几")


def is_chinese(text: str) -> bool:
    """Whether ``text`` holds a Han character and no kana or Hangul (Japanese and Korean keep their paths)."""
    return bool(_HAN.search(text)) and not _KANA_HANGUL.search(text)


def content_words(text: str, limit: int | None = None) -> list[str]:
    """The Chinese content words of ``text`` in order, without duplicates: jieba's accurate cut
    (:func:`timem.store.segmenter.jieba_words`) of its Han runs, without :data:`CJK_STOPWORDS`, punctuation, digits
    and one-character particles, and a measure word after 哪 or 几 (所 of 哪所大学). ASCII words are left out (the
    English rules handle them). ``[]`` for text that is not Chinese (:func:`is_chinese`)."""
    if not is_chinese(text):
        return []
    out: list[str] = []
    before = ""
    for word in jieba_words(unicodedata.normalize("NFKC", text)):
        after_question_word, before = before in ("哪", "几"), word
        if (not _HAN.search(word) or word in CJK_STOPWORDS or word in out
                or (after_question_word and word in _MEASURE_WORDS)):
            continue
        out.append(word)
        if limit is not None and len(out) == limit:
            break
    return out


def time_nouns(text: str) -> list[str]:
    """The words of :data:`TIME_NOUNS` in ``text`` (jieba's cut, as :func:`content_words`), in order, without
    duplicates: 周末 of 我周末做了什么？, not of 上周末 (one word). ``[]`` for text that is not Chinese."""
    if not is_chinese(text):
        return []
    return list(dict.fromkeys(w for w in jieba_words(unicodedata.normalize("NFKC", text)) if w in TIME_NOUNS))


def bm25_terms(question: str, keywords: list[str]) -> str:
    """The BM25 query of a Chinese question: its content words (:func:`content_words`), the characters of each
    two-character one that are not stopwords themselves, its ASCII words, then ``keywords``.

    The characters keep a word findable however jieba cut it: the question 我的狗叫什么名字 is cut 狗叫 ("bark")
    / 名字, the memory 我养了一只叫豆豆的柴犬 is cut 叫 / 豆豆 / 柴犬, and 叫 now matches. Function words are left
    out, so that a BM25 match (which the score gate takes as relevance) means a content word matched.
    """
    words = content_words(question)
    chars = [c for w in words if len(w) == 2 for c in w if c not in CJK_STOPWORDS and c not in words]
    ascii_words = _ASCII_WORD.findall(question)
    return " ".join(dict.fromkeys([*words, *chars, *ascii_words, *keywords]))


def is_loose(word: str) -> bool:
    """Whether jieba could as well have cut the two-character ``word`` into its two characters: the word is not in
    its dictionary (its HMM made it, e.g. 我学), or it is less than ``e**LOOSE_WORD_MARGIN`` times as likely as the two
    characters as words (:data:`LOOSE_WORD_MARGIN`: 狗叫, not 大学)."""
    whole = word_log_probability(word)
    if whole is None:
        return True
    first, second = word_log_probability(word[0]), word_log_probability(word[1])
    return first is not None and second is not None and first + second >= whole - LOOSE_WORD_MARGIN


def part_characters(question: str, keywords: Sequence[str] = ()) -> set[str]:
    """The characters :func:`bm25_terms` adds to the BM25 query of a Chinese question that are not words of it: those
    of a two-character content word that is not loose (:func:`is_loose`: 大 and 学 of 大学), unless they are a content
    word, a keyword, or a character of a loose word too. They still rank memories (a word cut another way in a memory
    is found), but a memory that matches only them matches no word of the question (学 of 大学 in 我最近在学中文), so
    the score gate does not count that as a keyword match (:attr:`timem.recall.leaves.Candidate.parts_only`). The
    characters of a loose word do count: 叫 of 狗叫 finds 我养了一只叫豆豆的柴犬. Empty for a question that is not
    Chinese."""
    words = content_words(question)
    pairs = [w for w in words if len(w) == 2]
    loose = {c for w in pairs if is_loose(w) for c in w}
    return {c for w in pairs if not is_loose(w) for c in w
            if c not in CJK_STOPWORDS and c not in words and c not in keywords and c not in loose}


def is_acknowledgement(text: str) -> bool:
    """Whether an L1 memory's text (``助手: 好的，我记住了。``, speaker prefix optional) is a Chinese reply that only
    acknowledges: no content word besides :data:`CJK_STOPWORDS` and acknowledgement words (好的, 记住, 收到, 谢谢
    ...). ``False`` for text that is not Chinese and for an empty text."""
    body = _SPEAKER.sub("", text.strip().splitlines()[-1] if text.strip() else "")
    if not is_chinese(body) or _ASCII_WORD.search(body):
        return False
    return all(w in _ACK_WORDS for w in content_words(body))


def complexity(question: str) -> Complexity:
    """``"complex"``, ``"hybrid"`` or ``"simple"`` for a Chinese question, by cue words: why / how / all / changes
    / comparisons are complex, when / how long / before / after and relative dates are hybrid, the rest simple
    (the centroid planner's MiniLM centroids are English: they planned 我的狗叫什么名字？ as complex)."""
    if _COMPLEX.search(question):
        return "complex"
    if _HYBRID.search(question):
        return "hybrid"
    return "simple"
