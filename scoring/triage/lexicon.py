"""The words triage reads, as compiled patterns: what a request asks for, and what in an answer is a claim.

English first, with the common phrasings of French, Spanish, German, Italian,
Portuguese and Dutch, and a few words of Chinese, Japanese and Russian. A
pattern is a list of alternatives joined here, so that each list reads as a
vocabulary; every pattern ignores case.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

__all__ = [
    "ADVICE",
    "CODE_ASK",
    "CODE_LANGUAGE",
    "CONVERSATION",
    "CREATE",
    "CREATIVE_GENRE",
    "CREATIVE_GENRE_CJK",
    "DIRECT_QUESTION",
    "EXPOSITORY_GENRE",
    "FOLLOW_UP",
    "IMAGINE",
    "INHERITING_EDIT",
    "KNOWLEDGE_ASK",
    "MATH",
    "OPINION",
    "PERSONAL_TOPIC",
    "PERSUASIVE",
    "QUESTION_CJK",
    "QUESTION_WORD",
    "READ_SUPPLIED",
    "REFUSAL",
    "REWRITE",
    "REWRITE_CJK",
    "SUMMARY",
    "SUMMARY_CJK",
    "SUPERLATIVE",
    "TASK_REFUSAL",
    "WORLD_CUE",
    "WORLD_CUE_ASK",
    "WORLD_CUE_CJK",
    "YEAR",
    "YES_NO_QUESTION",
    "Words",
]


class Words:
    """A pattern written in lowercase, matched against a lowercased copy of the text.

    Python's ``re`` tries every alternative at every position of a text when
    a pattern ignores case; without that flag it skips ahead to where a match
    can start, which makes the long vocabularies here 3 to 10 times faster.
    Where lowercasing changes a text's length (a few Unicode letters), a
    match's positions would not be the text's, so that text is matched
    ignoring case instead. A match's text is the lowercased one.
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._lowered = re.compile(pattern, flags)

    @functools.cached_property
    def _any_case(self) -> re.Pattern[str]:
        """Compiled when first needed: few texts change length when lowercased."""
        return re.compile(self.pattern, self._flags | re.IGNORECASE)

    def _pick(self, text: str) -> tuple[re.Pattern[str], str]:
        lowered = text.lower()
        return (self._lowered, lowered) if len(lowered) == len(text) else (self._any_case, text)

    def search(self, text: str) -> re.Match[str] | None:
        pattern, text = self._pick(text)
        return pattern.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        pattern, text = self._pick(text)
        return pattern.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        pattern, text = self._pick(text)
        return pattern.fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pattern, text = self._pick(text)
        return pattern.finditer(text)

    def sub(self, replacement: str, text: str) -> str:
        pattern, text = self._pick(text)
        return pattern.sub(replacement, text)


def _any(*alternatives: str, edges: str = "both") -> Words:
    """One pattern of the alternatives, matched as whole words (``both``), as word starts (``start``: stems such
    as "übersetz"), or anywhere (``none``: scripts without spaces between words)."""
    body = "|".join(alternatives)
    start = r"(?<![\w])" if edges in ("both", "start") else ""
    end = r"(?![\w])" if edges == "both" else ""
    return Words(f"{start}(?:{body}){end}")


# Greetings, thanks, farewells, acknowledgements and small talk: a message made only of these is conversation.
CONVERSATION = _any(
    r"h(i|ello|ey|iya|owdy)( there)?",
    r"yo",
    r"sup",
    r"good (morning|afternoon|evening|night|day)",
    r"thanks?( you)?( so much| very much| a lot| again)?",
    r"thx|ty|cheers|much appreciated|appreciate it|i appreciate (it|that|your help)",
    r"(that|this) (was|is) (helpful|great|perfect|awesome|amazing|funny|hilarious)",
    r"(that'?s|that’s|so) (helpful|great|perfect|awesome|amazing|funny|hilarious|cool|nice|interesting|sad)",
    r"(good|great|nice|awesome|perfect|cool|ok|okay|alright|got it|sure|yes|no|nope|yeah|yep|wow|lol|haha|hmm)",
    r"great job|well done",
    r"bye|goodbye|see (you|ya)( later| soon| tomorrow)?|take care|talk (to you )?later|good ?night",
    r"have a (good|nice|great) (day|one|night|weekend)",
    r"how are (you|u|things)( doing)?( today)?",
    r"how('s| is) (it going|your day|everything|life|your (morning|evening|week|weekend))( going)?( so far)?( today)?",
    r"what'?s up",
    r"how have you been",
    r"nice to meet you|pleased to meet you",
    r"(who|what) are you",
    r"what('s| is) your name",
    r"what can you do|what do you do",
    r"(are )?you (a (bot|robot|human|person|real person|machine)|an ai|real|there|alive|conscious|sentient|ok|okay|"
    r"busy|still there)",
    r"can you help( me)?|i need (some )?help|help me|please help",
    r"you('re| are) (great|awesome|amazing|the best|funny|smart|helpful|welcome)",
    r"i('m| am) (bored|back|tired|happy|sad|hungry|here|so excited|excited|fine|good|ok|okay|doing well)",
    r"me too|same here|no worries|no problem|sorry|my bad|never mind|nevermind",
    r"i love you|i like you|you rock",
    r"let'?s (chat|talk)|just saying hi|just wanted to say hi",
    r"(salut|bonjour|bonsoir|coucou|merci( beaucoup)?|au revoir|à bientôt|ça va|comment ça va|comment vas-tu)",
    r"bonne (nuit|journée)",
    r"(hola|buenos días|buenas (tardes|noches)|gracias|muchas gracias|adiós|hasta (luego|pronto)|qué tal|cómo estás)",
    r"(hallo|guten (morgen|tag|abend)|danke( schön| sehr)?|tschüss|auf wiedersehen|wie geht'?s( dir)?|wie geht es dir)",
    r"(ciao|buongiorno|buonasera|grazie( mille)?|arrivederci|come stai)",
    r"(olá|oi|bom dia|boa (tarde|noite)|obrigad[oa]|tchau|tudo bem|como vai)",
    r"(hoi|goedemorgen|dank je( wel)?|bedankt|doei|hoe gaat het)",
    r"(привет|здравствуйте|спасибо|пока|как дела)",
    r"(你好|谢谢|再见|早上好|こんにちは|ありがとう|おはよう|さようなら)",
)

# An elliptical turn that continues the one before: "And its population?", "What about Spain?", "Why?"
FOLLOW_UP = Words(
    r"^\s*(and|what about|how about|and what about|what of|or|also|but|then|so)\b"
    r"|^\s*(why|how come|really|are you sure|source|sources|proof|when|where|who|which one|how so|"
    r"tell me more|more|go on|continue|keep going|another( one)?|one more|again|more please|"
    r"et|y|und|e|en|и)\s*[?？!.]*\s*$"
    r"|^\s*(et|y|und|e|en)\b",
)
# A follow-up that edits the previous answer ("make it shorter"): the answer keeps the previous answer's kind.
INHERITING_EDIT = _any(
    r"(now |can you |could you |please )?(make|keep) (it|that|this|them)( a bit| a little| much)? "
    r"(shorter|longer|simpler|funnier|sadder|happier|more \w+|less \w+)",
    r"(shorter|longer|simpler|funnier|in simpler (words|terms)),? please",
    r"(now |can you |please )?(say|explain|do|write|put) (it|that|this) (again |differently |more simply )?"
    r"(in|as|for) (\w+ ){0,3}\w+",
    r"(now )?in (french|spanish|german|italian|portuguese|dutch|english|chinese|japanese|russian)( please)?",
    r"another (one|version|example)|one more|try again|again|rewrite it|redo it",
    r"(now |can you |please )?(summari[sz]e|shorten|simplify|translate|rephrase|expand) (it|that|this)( please)?",
)

CODE_LANGUAGE = _any(
    r"python",
    r"javascript|js|typescript|ts|node(\.js)?|react|vue|angular",
    r"java|kotlin|scala|groovy",
    r"c\+\+|c#|c sharp|\.net|golang|go (function|program|code|struct)|rust|swift|objective-c|dart|flutter",
    r"ruby|rails|php|perl|lua|haskell|elixir|erlang|clojure|julia|matlab|fortran|cobol|assembly|r script",
    r"sql|mysql|postgres(ql)?|sqlite|mongodb|graphql",
    r"bash|shell( script)?|zsh|powershell|batch file",
    r"html|css|sass|tailwind|jquery",
    r"regex|regexp|regular expression",
    r"django|flask|fastapi|pandas|numpy|pytorch|tensorflow|spring boot|express\.js",
    r"dockerfile|docker compose|kubernetes manifest|yaml file|makefile|terraform|ansible",
    r"excel formula|vba|google sheets formula|latex",
)
CODE_ASK = _any(
    r"(write|create|implement|code|generate|build|make|give me|show me|produce|need|want)\b[^.?!]{0,60}?"
    r"\b(function|method|class|script|program|snippet|code|query|regex|regexp|unit tests?|test cases?|"
    r"component|endpoint|api|algorithm|one-liner|loop|decorator|struct|interface|module|cli|macro|formula|"
    r"dockerfile|makefile|sql|bash|css|html)s?",
    r"(fix|debug|refactor|optimi[sz]e|review|explain|comment|document|convert|translate|port|rewrite|simplify|"
    r"speed up|clean up)\b[^.?!]{0,40}?\b(this|my|the|following)\b[^.?!]{0,20}?"
    r"\b(code|function|script|program|query|class|method|snippet|regex|loop|sql)",
    r"what does (this|the following|my) (code|function|script|program|query|regex|snippet|line) do",
    r"why (does|is|doesn'?t|isn'?t) (this|my) (code|function|script|program|query|loop|test)",
    r"(traceback|stack ?trace|syntaxerror|typeerror|valueerror|nullpointerexception|segfault|"
    r"segmentation fault|compil(e|er) error|undefined is not a function)",
    r"(écris|écrivez|escribe|schreib|scrivi|escreva|schrijf)\b[^.?!]{0,40}?\b(fonction|función|funktion|funzione|"
    r"função|functie|script|programme|programa|programm|programma|code|código|codice)",
)

# Composing something new for the user.
CREATE = _any(
    r"write|compose|create|make up|come up with|generate|draft|craft|pen|invent|give me|tell me|sing|"
    r"brainstorm|suggest|need|want|could you do|can you do",
    r"écris|écrivez|compose|invente|raconte(-moi)?|donne-moi|fais|"
    r"escribe|escríbeme|compón|inventa|cuéntame|dame|haz|"
    r"schreib(e)?|dichte|erfinde|erzähl(e)?( mir)?|gib mir|"
    r"scrivi|componi|inventa|raccontami|dammi|"
    r"escreva|escreve|componha|invente|conte(-me)?|me conte|me dê|"
    r"schrijf|verzin|vertel( me)?",
    r"напиши|сочини|расскажи|写|作|書いて|作って",
)
CREATIVE_GENRE = _any(
    r"poems?|poetry|haikus?|limericks?|sonnets?|odes?|ballads?|verses?|rhymes?|acrostic|free verse|couplets?",
    r"(short |bedtime |love |ghost |horror |funny |children'?s )?(story|stories)|tales?|fables?|fairy ?tales?|"
    r"parables?|myths? about|legends? about|fan ?fiction|fanfic|flash fiction|novel|chapter|plot for|"
    r"screenplay|skit|scene|dialogue|monologue|script for a (play|movie|film|video|skit|sketch|commercial)",
    r"jokes?|puns?|riddles?|knock-knock|one-liners? about|pick-?up lines?|tongue twisters?|roast",
    r"songs?|lyrics|raps?|jingles?|lullab(y|ies)|anthem",
    r"slogans?|taglines?|mottos?|catchphrases?|catch phrases?|names? for|title for|titles for|"
    r"captions?|hashtags?|tweets?|instagram post|linkedin post|product description|ad copy|advert(isement)?s?|"
    r"commercial|blurb|elevator pitch",
    r"toasts?|wedding speech|best man speech|eulogy|birthday (message|wish(es)?|card)|greeting card|"
    r"(thank[- ]you|condolence|get well|congratulations?|farewell|love) (note|message|card|letter)|"
    r"letter|email|e-mail|cover letter|invitation|apology|resignation|complaint|newsletter|"
    r"bio for|dating profile|personal statement|motivational (message|quote)|doctor'?s note|sick note|excuse note",
    r"(retirement|birthday|graduation|wedding|anniversary|christmas|holiday|farewell|sympathy|valentine'?s?|"
    r"get[- ]well|baby shower|new year'?s?) (message|card|note|wish(es)?|speech|toast|poem|greeting)|"
    r"(message|note|greeting) for (a|an|my|the) \w+( \w+)? card",
    r"poème|poésie|une histoire|un conte|une blague|des blagues|une chanson|un slogan|une lettre|"
    r"poema|poesía|un cuento|una historia|un chiste|chistes|una canción|una carta|"
    r"gedicht|eine geschichte|ein märchen|einen witz|witze|ein lied|einen brief|"
    r"poesia|una storia|un racconto|una barzelletta|una canzone|una filastrocca|"
    r"uma história|um conto|uma piada|uma canção|uma carta|"
    r"een gedicht|een verhaal|een grap|een liedje|een brief",
    r"стих(отворение)?|сказк[уа]|шутк[уа]|анекдот|песн[юя]",
)
CREATIVE_GENRE_CJK = _any(r"诗|故事|笑话|歌词|詩|物語|ジョーク", edges="none")
# Imagining and play: creative whatever the genre.
IMAGINE = _any(
    r"imagine (that|you|a|an|if)|pretend (that|you|to be)|role-?play|let'?s play|act as (a|an|if)|"
    r"what if (a|an|the|you|dogs|cats|animals)|in the style of|as if you were|you are a (pirate|wizard|dragon)|"
    r"(invent|make up|create|design|dream up) (a|an|some|me a) (new|imaginary|fictional|fictitious|made-up|fantasy|"
    r"alien|magical)"
)
EXPOSITORY_GENRE = _any(
    r"paragraph|essay|article|report|overview|summary|biography|bio of|history|explanation|description|"
    r"introduction|intro to|fact ?sheet|encyclopedia entry|wiki(pedia)? (entry|article)|timeline|profile of|"
    r"brief|primer|explainer|write-?up|backgrounder|short text|few sentences|sentences? about|lesson|"
    r"study guide|notes on",
    r"paragraphe|essai|article|résumé de l'histoire|l'histoire de|biographie|"
    r"párrafo|ensayo|artículo|la historia de|biografía|"
    r"absatz|aufsatz|artikel|die geschichte (von|der|des)|biografie|"
    r"paragrafo|saggio|articolo|la storia di|biografia|"
    r"parágrafo|ensaio|artigo|a história de",
)
PERSUASIVE = _any(
    r"persuasive|argumentative|argue|arguing|convince|opinion piece|op-ed|why (you|people|everyone) should|"
    r"why i (love|hate|like)|for or against|debate"
)
# "about my trip", "about yourself": writing about the user's own life is composition, not a record of the world.
PERSONAL_TOPIC = _any(r"(about|on|for|describing) (my|our|your|yourself|myself|me|us)\b")

REWRITE = _any(
    r"rewrite|re-write|rephrase|paraphrase|reword|proofread|proof-read|copy-?edit|polish|revise|edit (this|my|the)",
    r"(fix|correct|check)\b[^.?!]{0,30}?\b(grammar|spelling|punctuation|typos?|errors|mistakes|wording|sentence|"
    r"text|paragraph|this|my)",
    r"grammatical(ly)? (correct|right)|is (this|it) (correct|grammatical|proper english)",
    r"make (this|it|that|the|my)( \w+)? (under|within|fit|fewer|below|into)\b",
    r"make (this|it|that|the|my)( \w+)?( sound)?"
    r"( a bit| a little| much)? (more|less|shorter|longer|formal|informal|polite|friendlier|friendly|professional|"
    r"concise|simpler|clearer|casual|positive|neutral)",
    r"shorten|condense|tighten|trim( down)?|cut (this|it) down|simplify (this|the following|the text|it)|"
    r"expand (on )?(this|these|the following)|elaborate on (this|these)",
    r"translate|translation of|how do (you|i) say|what is [^?]{1,40} in (french|spanish|german|italian|"
    r"portuguese|dutch|english|japanese|chinese|russian|korean|arabic)",
    r"(convert|turn|change|transform|format|reformat|put|organi[sz]e) (this|these|it|the (following|text|list|data|"
    r"notes|sentence|paragraph)|my (notes|list|text))\b[^.?!]{0,30}?\b(into|to|as|in)\b",
    r"(into|as|to) (a )?(bullet(ed)? (points|list)|numbered list|table|json|csv|markdown|title case|upper ?case|"
    r"lower ?case|sentence case|camel ?case|snake[_ ]case|passive voice|active voice|past tense|present tense|plural|"
    r"singular)",
    r"(change|adjust|soften) the tone|in a (more )?(formal|informal|polite|friendly|professional|casual) tone",
    r"capitali[sz]e|alphabeti[sz]e|sort (these|this|the following|them)|reorder|remove (the )?duplicates|"
    r"spell-?check|word count|count the words|how many words",
    r"extract|pull out|find (all )?the (names|dates|emails|numbers|verbs|nouns|adjectives|keywords)|"
    r"list (all )?the (names|dates|emails|numbers|verbs|nouns|adjectives|keywords) (in|from)",
    r"classify|categori[sz]e|label (this|these|each)|tag (this|these|each)|sentiment|detect the language|"
    r"what language is (this|it)|is this (review|message|email|text) (positive|negative)",
    r"réécris|reformule|corrige|traduis|tradui(re|sez)|reescribe|corrige|tradu(ce|cir|zca)|"
    r"umschreiben|schreibe? (das|den text) um|korrigiere|übersetze?|riscrivi|correggi|traduci|"
    r"reescreva|corrija|traduza|herschrijf|verbeter|vertaal",
    r"перевед",
    edges="start",
)
REWRITE_CJK = _any(r"翻译|翻訳|改写|修改", edges="none")
SUMMARY = _any(
    r"summari[sz]e|summary|sum (it |this |that )?up|tl;? ?dr|key (points|takeaways)|main (points|ideas?)|"
    r"the gist|in (one|two|three|a few|\d+) (sentences?|words|bullet points|lines)|recap|condense",
    r"résume|resumen|resumir|resume (este|esta|el|la)|zusammenfass|riassumi|riassunto|resuma|samenvat|кратко|резюм",
    edges="start",
)
SUMMARY_CJK = _any(r"总结|概括|要約", edges="none")
# A question about text the user supplied: answered from that text, not from the model's knowledge.
READ_SUPPLIED = _any(
    r"(according to|based on|from|in) (the|this|that|my) (text|passage|article|email|document|paragraph|story|"
    r"excerpt|report|notes|message|letter|transcript|review|above|following)",
    r"(the|this) (text|passage|article|email|document|excerpt|author) (says|said|mentions|claims|argues|states)",
    r"what (is|was) (the|this) (text|passage|article|email|document|story|excerpt) about",
    r"read (this|the following|the text|the passage)|what (does )?the (author|writer|text|passage) (thinks?|says?|"
    r"means?|argues?|claims?|wants?)|the author'?s (view|opinion|point|argument|tone)",
    r"(the|this) (above|following)",
)

MATH = Words(
    r"\d\s*(?:[-+*/×÷^]|\*\*)\s*\(?\s*\d"
    r"|\b\d+(?:\.\d+)?\s*(?:plus|minus|times|multiplied by|divided by|over|to the power of|squared|cubed|mod)\b"
    r"|\b(?:what(?:'s| is)|calculate|compute|find)\s+\d+(?:\.\d+)?\s*%\s*of\b"
    r"|\b(?:solve|simplify|factori[sz]e|expand|integrate|differentiate|evaluate)\b[^.?!]{0,30}?"
    r"(?:equation|expression|integral|derivative|\d|\bx\b)"
    r"|\b(?:derivative|integral|square root|cube root|sqrt|factorial|log(?:arithm)?) of\b"
    r"|\b(?:calculate|compute|how much is|what(?:'s| is))\s+[\d(]"
    r"|\b(?:calculate|compute|work out)\b[^.?!]{0,60}\d"
    r"|\b(?:add|subtract|multiply|divide|sum)\b\s+(?:up\s+)?-?\d[\d.,]*\s*(?:and|by|from|to|with|,)\s*-?\d"
    r"|\b(?:area|perimeter|circumference|volume|hypotenuse) of (?:a|an|the)\b[^.?!]{0,60}\d"
    r"|\d[^?]{0,120}\bwhat(?:'s| is) the (?:total|sale price|final price|new price|average|mean|median|sum|"
    r"difference|product|quotient|remainder|result|answer)\b"
    r"|\bconvert \d+(?:\.\d+)?\s*\w+ (?:to|into)\b"
    r"|\b\d+x\s*[-+=]|=\s*\d+\s*$|\bx\s*=\s*\?"
    r"|\bif\b[^?]{0,80}\d[^?]{0,80}\bhow (?:many|much|long|far|fast)\b"
    r"|combien (?:font|fait)\s+\d|cuánto es\s+\d|wie ?viel ist\s+\d|quanto (?:fa|é|e)\s+\d",
)

OPINION = _any(
    r"what do you think|what'?s your (opinion|take|view|favou?rite|preference)|your (opinion|thoughts|take|view)",
    r"(your|ur) favou?rite|do you (like|love|prefer|think|believe|feel|enjoy|agree|hate)|would you rather",
    r"what would you (do|choose|pick|say|buy|change)|if you (could|were|had)|(do|would|can) you (recommend|suggest)",
    r"(is|are) [^?]{1,40}\b(acceptable|appropriate|rude|weird|overrated|underrated|worth it|a good idea|a bad idea|"
    r"ethical|immoral|wrong to|ok to|okay to|cool|boring|fun)\b",
    r"which (one )?(is|do you|would you|should i)[^?]{0,20}(better|prefer|recommend|choose|pick|like)|"
    r"(better|preferable),? [^?]{1,40}\bor\b",
    r"is (it|this|that) (better|worth|a good idea|wise|ok|okay|normal|bad|rude|weird|fine|smart|safe to)",
    r"is my \w+( \w+){0,5} (any good|good|ok|okay|bad|worth it|realistic|crazy)|any good\b|good idea|bad idea",
    r"(the )?(best|worst|greatest|nicest|coolest|prettiest|funniest|most (beautiful|underrated|overrated|fun|"
    r"interesting|romantic|relaxing|enjoyable)) [^?]{0,40}(ever|of all time|to (visit|watch|read|learn|buy|eat|"
    r"play|try|use|live))",
    r"(overrated|underrated|over-?hyped)",
    r"(what|which|who)('s| is| are| was)? (the |your )?(best|worst|greatest|nicest|coolest|tastiest|prettiest|"
    r"funniest|most (beautiful|fun|romantic|delicious|interesting|underrated|overrated|enjoyable))(?!-)",
    r"(rate|critique|review|roast|judge) (my|this|our)|(feedback|thoughts) on (my|this|our)|how does (my|this) \w+ "
    r"(look|sound)",
    r"(qu'en penses-tu|qu'est-ce que tu penses|ton avis|votre avis|tu préfères|ton préféré|ta préférée)",
    r"(penses-tu|crois-tu|ça vaut (le coup|la peine)|vaut-il la peine|c'est mieux|est-il préférable)",
    r"(es mejor|ist es besser|è meglio|é melhor|is het beter)",
    r"(qué opinas|qué piensas|tu opinión|tu favorit[oa]|prefieres|crees que|piensas que|vale la pena)",
    r"(was denkst du|was hältst du|deine meinung|dein lieblings|magst du|glaubst du|findest du|lohnt (es )?sich)",
    r"(cosa ne pensi|che ne pensi|la tua opinione|il tuo preferito|preferisci|credi che|secondo te|vale la pena)",
    r"(o que você acha|sua opinião|seu favorito|você prefere|você acha|vale a pena)",
    r"(wat vind je|jouw mening)",
    r"(你觉得|你认为|你喜欢|как ты думаешь|твоё мнение|どう思)",
)
ADVICE = _any(
    r"should (i|we)|shall i|would you (recommend|suggest|advise)|can you (recommend|suggest)|"
    r"recommend (me )?(a|an|some|any|good)|any (tips|advice|ideas|suggestions|recommendations)",
    r"(give|offer) me (some |a few |\d+ )?(tips|advice|ideas|suggestions|pointers|recommendations)|"
    r"(tips|advice|ideas|suggestions) (for|on|to|about)",
    r"how (can|do|should|could|would) (i|we) (improve|become|get better|get over|stay|deal|cope|handle|stop|quit|"
    r"start|prepare|motivate|manage|overcome|avoid|convince|tell|ask|find|choose|pick|decide|balance|focus|relax|"
    r"save|lose|gain|be more|be less|make friends|sleep better|get motivated|study|negotiate|apologi[sz]e)",
    r"how to (be|become|stay|deal|cope|improve|stop|make friends|get better|get over|relax|focus|save money)",
    r"help me (decide|choose|pick|plan|figure out|think)|what should i|pros and cons|is it worth|worth it",
    r"(some|any|a few) (good|great|fun|nice|cool|interesting|easy|healthy|cheap|creative) \w+",
    r"plan (a|my|an|our|me a)\b[^.?!]{0,30}(trip|itinerary|party|wedding|week|weekend|day|evening|workout|diet|"
    r"budget|schedule|menu|date night|vacation|holiday)",
    r"i('m| am) (feeling|thinking about|considering|trying to decide|nervous|stressed|anxious|sad|lonely|"
    r"worried|struggling|overwhelmed)|i feel (sad|lonely|anxious|stressed|overwhelmed|lost|stuck)",
    r"(dois-je|devrais-je|conseil|conseils|tu me conseilles|recommande|debería|consejos?|me recomiendas|"
    r"sollte ich|tipps?|ratschlag|empfiehlst|dovrei|consigli|devo|conselhos?|você recomenda|moet ik|advies)",
    r"(我应该|建议|посоветуй|стоит ли|どうすれば)",
)

# Asking for facts. Question words open a clause ("Who wrote Hamlet?", "Hey, quick question: who ..."); a yes/no
# question opens one and ends in a question mark; commands that ask for knowledge may stand anywhere.
_CLAUSE_START = r"(?:^|(?<=[.!?;:,¿¡\n])\s*|^\s*(?:and|but|so|ok|okay|hey|hi|also|please|now)\s+)"
QUESTION_WORD = Words(
    _CLAUSE_START + r"(?:what|what's|whats|who|who's|whom|whose|when|where|where's|which|why|"
    r"how (?:many|much|long|far|old|big|tall|high|deep|fast|often|large|heavy|hot|cold|wide|does|do|did|is|are|was|"
    r"were|can|could)|"
    r"quel(?:le)?s?|qui|quand|où|pourquoi|comment|combien|qu'est-ce|est-ce que|"
    r"qué|quién|quiénes|cuándo|dónde|cuál|cuáles|cuántos?|cuántas?|por qué|cómo|"
    r"was|wer|wann|wo|welche[rsnm]?|warum|wieso|weshalb|wie|"
    r"che cosa|cosa|chi|quando|dove|quale|quali|quanti|quante|perché|come|"
    r"o que|quem|onde|qual|quais|quantos|quantas|por que|como|"
    r"wat|wie|wanneer|waar|welke|waarom|hoeveel|hoe|"
    r"что|кто|когда|где|какой|какая|какие|сколько|почему|как)(?![\w])",
)
YES_NO_QUESTION = Words(
    _CLAUSE_START + r"(?:is|are|was|were|did|does|do|has|have|had|can|could|will|would|est-ce|ist|sind|war|hat|"
    r"es|son|fue|è|sono|é|são)\s(?!you\b|u\b)[^?]{2,}\?\s*$",
)
KNOWLEDGE_ASK = _any(
    r"tell me (about|the|who|what|when|where|why|how|which|some facts|facts|more about|something about)",
    r"tell me (something|anything|a (little|bit)|a few things|more)( \w+)? (about|on|regarding)",
    r"explain|describe|define|definition of|meaning of|name (the|a|an|all|three|two|five|some|\d+)|"
    r"list (the|all|some|\d+|three|five|ten|every)|give me (the|a list|a brief|an overview|some facts|facts|"
    r"a summary of|a timeline|the history)|compare|contrast|difference between|history of|facts about|"
    r"overview of|i('d| would) like to know|i want to know|do you know|can you tell me|i wonder|i'm curious|"
    r"look up|find out|outline|walk me through how|teach me about",
    r"(a|an|some|one|\d+|three|five|ten) (fun |interesting |random |cool |surprising |quick )?(facts?|trivia)",
    r"explique|décris|dis-moi|parle-moi de|explica|describe|dime|háblame de|erkläre?|beschreibe?|nenne|"
    r"erzähl mir (etwas )?über|spiega|descrivi|dimmi|parlami di|explique|descreva|diga-me|fale sobre|leg uit|"
    r"объясни|расскажи о",
)
QUESTION_CJK = _any(r"什么|谁|哪|几|多少|为什么|怎么|吗|何|誰|いつ|どこ|なぜ|どう|ですか", edges="none")
# A direct question to answer inside a creative or opinion frame: "In the voice of a pirate, what is ...?"
DIRECT_QUESTION = Words(
    r"(^|[,.;:!?]\s*)(what|who|when|where|which|how many|how much|how old|how long|how far|tell me the|"
    r"name the)\b[^.!?]*\?",
)

# Words that tie named things together in a statement about the world: with a name or a number, a claim.
# Only words that state a relation ("born in", "the capital of"); mere topics ("city", "war") are left out, since
# advice and poems name places and times without claiming anything about them.
WORLD_CUE = _any(
    r"capital|capitals|born|died|founded|co-founded|established|invented|inventor|discovered|discoverer|"
    r"wrote|written by|author of|painted|composed|directed|designed by|built (in|by)|constructed|erected|"
    r"located|situated|lies (in|on|between)|population|inhabitants|president of|president|prime minister|"
    r"chancellor|king of|queen of|emperor|empress|pharaoh|ruled|reigned|elected|won the|signed|"
    r"declared (its )?independence|independence|currency|official language|borders|flows (through|into)|"
    r"landed|orbits|atomic number|boils at|melts at|freezes at|speed of light|founder of|named after|"
    r"headquartered|assassinated|crowned|conquered|defeated|sank|erupted|"
    r"km|kilomet(er|re)s|miles|met(er|re)s (tall|high|long|deep)|feet (tall|high)|million|billion|"
    r"per ?cent|degrees (celsius|fahrenheit)|°[CF]",
    r"capitale|née?|nacid[oa]|geboren|nat[oa] (a|nel)|nascid[oa]|fondée?|fundad[oa]|gegründet|fondat[oa]|"
    r"habitants|población|einwohner|popolazione|população|inwoners|situé|situada|ubicad[oa]|liegt (in|an)|"
    r"président|presidente|präsident|écrit par|escrit[oa] por|geschrieben von|scritt[oa] da|inventée?|"
    r"inventad[oa]|erfunden|inventat[oa]|hauptstadt|hoofdstad|"
    r"столица|столицей|родился|родилась|население|основан|изобрёл|написал",
)
WORLD_CUE_CJK = _any(r"首都|出生|位于|人口|发明|建立|生まれ|発明|創立", edges="none")
# Superlatives and firsts tied to a place: "the tallest mountain in Africa", "the first woman to win".
# Case-sensitive on purpose: the place is a name ("in Europe") or the world.
SUPERLATIVE = re.compile(
    r"\b(?:tallest|largest|biggest|smallest|longest|highest|deepest|oldest|hottest|coldest|driest|most populous)"
    r"(?: \w+){0,3} (?:in|of|on) (?:the )?(?:world|planet|[A-Z]\w+)"
    r"|\bfirst (?:\w+ ){0,2}(?:to (?:reach|walk|climb|win|fly|land|cross|orbit|discover|circumnavigate)|"
    r"(?:man|woman|person|president|country|nation|emperor) (?:to|of|in))"
)
YEAR = re.compile(
    r"(?<![\w.,])(?:1[0-9]{3}|20[0-9]{2})(?![\w.,]\d)|\b\d{1,4}\s?(?:BC|BCE|AD|CE|av\. J\.-C\.|a\. ?C\.)\b"
)

# A refusal of the task itself, as opposed to an answer that opens with "unfortunately": the only refusal that a
# rewrite can be told apart by ("Unfortunately, I will be unable to attend" is a rewritten sentence).
TASK_REFUSAL = Words(
    r"^\W{0,3}(i'?m sorry,? (but )?|sorry,? (but )?)?i (can(no|'|’)?t|cannot|won'?t|will not|am unable to|'m unable to|"
    r"must decline to) (help|assist|do|translate|rewrite|summari[sz]e|comply|write|create|provide)",
)
# A request about a named thing's relations: "what do you think the capital of Peru is?" asks a fact.
WORLD_CUE_ASK = _any(
    r"capital of|population of|born|died|founded|invented|discovered|wrote|written by|painted|composed|"
    r"first (man|woman|person|people|human|astronaut|president|king|queen|emperor) (on|to|in|of)|inventor of|"
    r"president of|prime minister of|king of|queen of|located|currency of|official language|tallest|largest|"
    r"longest|highest|deepest|oldest|in what year|what year|which year|how many people|how tall|how long is|"
    r"how far is|how old is|capitale de|hauptstadt|capital de|when (did|was|were|is)",
    r"the (year|date|day) (that |when |of )?(\w+ ){0,4}(ended|began|started|happened|fell|died|was born|won|sank|"
    r"landed|was invented|was discovered|was founded|was signed)",
)

# An answer that declines: opens the answer, and an answer that goes on to say something is not a refusal.
REFUSAL = Words(
    r"^\W{0,3}(no,? i can(no|'|’)?t|no,? i won'?t|"
    r"i'?m (sorry|afraid|unable|not able)(?! to hear| for your loss| about that| that happened)|"
    r"i am (sorry|afraid|unable|not able)(?! to hear| for your loss)|sorry,|unfortunately,? i|"
    r"i can(no|'|’)?t (help|answer|assist|provide|do|share|give|comply|write|create|tell)|i cannot|"
    r"i won'?t|i will not|i must decline|i'm not comfortable|as an ai\b|as a language model|"
    r"i do(n'?t| not) (have|know)\b|i'?m not (sure|certain|aware)|i have no (information|idea|way)|"
    r"je (suis désolée?|ne peux pas|ne sais pas)|désolée?|lo siento|no puedo|no lo sé|"
    r"es tut mir leid|ich kann (das )?nicht|ich weiß (es )?nicht|mi dispiace|non posso|non lo so|"
    r"desculpe|sinto muito|não posso|não sei|het spijt me|ik kan (dat )?niet|"
    r"извините|к сожалению|я не могу|抱歉|对不起|我不能|申し訳)",
)
