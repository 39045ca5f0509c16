package ai.chalk.compute.server.evaluation.scorer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class BuiltinScorersTest {

    private final BuiltinScorers scorers = new BuiltinScorers(new Embedders(name -> null));

    private RowScore score(String id, Object output, Object expected) {
        Map<String, @Nullable Object> row = new HashMap<>();
        row.put("output", output);
        row.put("expected", expected);
        return scorers.create(id).score(row);
    }

    private double similarity(String method, String a, String b) {
        return score("string_similarity:{\"method\":\"" + method + "\"}", a, b).score();
    }

    @Test
    void exactMatchTrimsByDefaultAndFoldsCaseAndWhitespaceWhenAsked() {
        assertThat(score("exact_match", " Paris\n", "Paris").score()).isEqualTo(1.0);
        assertThat(score("exact_match", "paris", "Paris").score()).isEqualTo(0.0);
        assertThat(score("exact_match", "paris", "Paris").metadata()).containsEntry("match", false);
        assertThat(score("exact_match:{\"case_insensitive\":true}", "STRASSE", "straße")
                        .score())
                .isEqualTo(1.0);
        assertThat(score("exact_match", "New  York", "New York").score()).isEqualTo(0.0);
        assertThat(score("exact_match:{\"collapse_whitespace\":true}", "New \t York", "New York")
                        .score())
                .isEqualTo(1.0);
        assertThat(score("exact_match:{\"trim\":false}", " Paris", "Paris").score())
                .isEqualTo(0.0);
    }

    @Test
    void inputsNameTheColumnsCompared() {
        BuiltinScorer scorer = scorers.create("exact_match:{\"inputs\":[\"answer\",\"gold\"]}");
        assertThat(scorer.inputs()).containsExactly("answer", "gold");
        assertThat(scorer.score(Map.of("answer", "4", "gold", 4)).score()).isEqualTo(1.0);
        assertThatThrownBy(() -> scorer.score(Map.of("answer", "4", "expected", "4")))
                .isInstanceOf(RowScoringException.class)
                .hasMessage("the row has no column 'gold'; its columns are [answer, expected]");
        Map<String, @Nullable Object> nulls = new HashMap<>();
        nulls.put("answer", null);
        nulls.put("gold", "4");
        assertThatThrownBy(() -> scorer.score(nulls)).hasMessage("column 'answer' is null in this row");
        assertThatThrownBy(() -> scorers.create("exact_match:{\"inputs\":[\"a\",\"b\",\"c\"]}"))
                .hasMessageContaining("exact_match takes 2 input columns")
                .hasMessageContaining("[a, b, c]");
    }

    @Test
    void unknownScorersAndOptionsAreRefusedNamingTheValidOnes() {
        assertThatThrownBy(() -> scorers.create("fuzzy_match"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("there is no built-in scorer fuzzy_match; the built-ins are exact_match, ");
        assertThatThrownBy(() -> scorers.create("exact_match:{\"case_insensitiv\":true}"))
                .hasMessage("exact_match has no option case_insensitiv; its options are inputs, trim, "
                        + "collapse_whitespace, case_insensitive");
        assertThatThrownBy(() -> scorers.create("exact_match:{\"trim\":\"yes\"}"))
                .hasMessage("exact_match option trim must be true or false, not \"yes\"");
        assertThatThrownBy(() -> scorers.create("exact_match:[1]")).hasMessageContaining("must be a JSON object");
        assertThatThrownBy(() -> scorers.create("exact_match:{oops"))
                .hasMessageStartingWith("the options of built-in scorer exact_match are not valid JSON");
        assertThatThrownBy(() -> scorers.create("string_similarity:{\"method\":\"cosine\"}"))
                .hasMessage("string_similarity option method is one of [jaro_winkler, jaccard, token_set, "
                        + "token_sort, partial, sequence], not 'cosine'");
    }

    @Test
    void levenshteinIsOneMinusDistanceOverTheLongerLength() {
        RowScore kitten = score("levenshtein", "kitten", "sitting");
        assertThat(kitten.score()).isCloseTo(1 - 3.0 / 7, within(1e-12));
        assertThat(kitten.metadata()).containsEntry("distance", 3);
        assertThat(score("levenshtein", "", "").score()).isEqualTo(1.0);
        assertThat(score("levenshtein", "abc", "").score()).isEqualTo(0.0);
        // characters beyond Latin-1 and outside the BMP compare as one character each
        assertThat(score("levenshtein", "naïve café ☕", "naïve café ☕").score()).isEqualTo(1.0);
        assertThat(score("levenshtein", "a😀", "a😁").metadata()).containsEntry("distance", 1);
        assertThat(score("levenshtein", "a😀", "a😁").score()).isEqualTo(0.5);
        assertThat(score("levenshtein:{\"case_insensitive\":true}", "ABC", "abd")
                        .score())
                .isCloseTo(2.0 / 3, within(1e-12));
    }

    @Test
    void regexMatchSearchesOrCoversAndKeepsTheMatchAndNamedGroups() {
        RowScore found =
                score("regex_match:{\"pattern\":\"(?<year>\\\\d{4})-(?<month>\\\\d{2})\"}", "released 2024-05 in", "x");
        assertThat(found.score()).isEqualTo(1.0);
        assertThat(found.metadata()).containsEntry("match", "2024-05");
        assertThat(found.metadata()).containsEntry("groups", Map.of("year", "2024", "month", "05"));
        assertThat(score("regex_match:{\"pattern\":\"\\\\d{4}\",\"full_match\":true}", "in 2024", "x")
                        .score())
                .isEqualTo(0.0);
        assertThat(score("regex_match:{\"pattern\":\"\\\\d{4}\",\"full_match\":true}", "2024", "x")
                        .score())
                .isEqualTo(1.0);
        // without a pattern option, the second column holds the pattern
        RowScore fromColumn = score("regex_match", "Order #A-17 shipped", "#(?<id>[A-Z]-\\d+)");
        assertThat(fromColumn.metadata()).containsEntry("groups", Map.of("id", "A-17"));
        RowScore missed = score("regex_match:{\"case_insensitive\":false}", "abc", "B");
        assertThat(missed.score()).isEqualTo(0.0);
        assertThat(missed.metadata()).containsEntry("matched", false).containsEntry("match", null);
        assertThat(score("regex_match:{\"case_insensitive\":true}", "abc", "B").score())
                .isEqualTo(1.0);
        assertThatThrownBy(() -> score("regex_match", "abc", "(unclosed"))
                .isInstanceOf(RowScoringException.class)
                .hasMessageStartingWith("column 'expected' is not a valid regular expression");
        assertThatThrownBy(() -> scorers.create("regex_match:{\"pattern\":\"[a-\"}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("regex_match option pattern is not a valid regular expression");
    }

    @Test
    void aCatastrophicallyBacktrackingPatternFromADatasetFailsItsRowWithinTheBudget() {
        // Java's regex engine memoizes plain nested quantifiers; a back-reference (exponential) and stacked
        // wildcards (polynomial) still run for minutes unchecked
        for (String[] attack :
                new String[][] {{"^(a+)+\\1b", "a".repeat(30)}, {"\\s*.*\\s*.*\\s*.*=", "a".repeat(2000)}}) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> score("regex_match", attack[1], attack[0]))
                    .isInstanceOf(RowScoringException.class)
                    .hasMessageContaining("backtracks too much on this row's output");
            assertThat(Duration.ofNanos(System.nanoTime() - start))
                    .isLessThan(RegexMatchScorer.MATCH_BUDGET.plusSeconds(2));
        }
    }

    @Test
    void containsScoresAllAnyOrTheFractionOfExpectedSubstrings() {
        String expected = "[\"Paris\", \"Lyon\", \"Nice\"]";
        String answer = "Paris and Lyon are in France";
        assertThat(score("contains", answer, expected).score()).isEqualTo(0.0);
        assertThat(score("contains", answer, expected).metadata())
                .containsEntry("found", List.of("Paris", "Lyon"))
                .containsEntry("missing", List.of("Nice"));
        assertThat(score("contains:{\"mode\":\"any\"}", answer, expected).score())
                .isEqualTo(1.0);
        assertThat(score("contains:{\"mode\":\"fraction\"}", answer, expected).score())
                .isCloseTo(2.0 / 3, within(1e-12));
        assertThat(score("contains", answer, "Lyon").score()).isEqualTo(1.0);
        assertThat(score("contains", answer, "lyon").score()).isEqualTo(0.0);
        assertThat(score("contains:{\"case_insensitive\":true}", answer, "lyon").score())
                .isEqualTo(1.0);
        // a bracket that does not open a JSON array is text to look for
        assertThat(score("contains", "see [1", "[1").score()).isEqualTo(1.0);
    }

    @Test
    void numericCloseUsesAbsoluteOrRelativeToleranceOrGradesByDistance() {
        assertThat(score("numeric_close", "29.97", 29.97).score()).isEqualTo(1.0);
        assertThat(score("numeric_close", "30", 29.97).score()).isEqualTo(0.0);
        assertThat(score("numeric_close:{\"abs_tol\":0.05}", "30", 29.97).score())
                .isEqualTo(1.0);
        assertThat(score("numeric_close:{\"rel_tol\":0.01}", "101", "100").score())
                .isEqualTo(1.0);
        assertThat(score("numeric_close:{\"rel_tol\":0.001}", "101", "100").score())
                .isEqualTo(0.0);
        RowScore graded = score("numeric_close:{\"graded\":true}", "90", "100");
        assertThat(graded.score()).isCloseTo(0.9, within(1e-12));
        assertThat(graded.metadata())
                .containsEntry("difference", 10.0)
                .containsEntry("relative_difference", 0.1)
                .containsEntry("within_tolerance", false);
        assertThat(score("numeric_close:{\"graded\":true,\"scale\":40}", "90", "100")
                        .score())
                .isCloseTo(0.75, within(1e-12));
        assertThat(score("numeric_close:{\"graded\":true}", "300", "100").score())
                .isEqualTo(0.0);
        RowScore words = score("numeric_close", "about thirty", "30");
        assertThat(words.score()).isEqualTo(0.0);
        assertThat(words.metadata()).containsEntry("error", "output is not a number: 'about thirty'");
        assertThatThrownBy(() -> score("numeric_close", "30", "n/a"))
                .isInstanceOf(RowScoringException.class)
                .hasMessage("column 'expected' is not a number: 'n/a'");
        assertThatThrownBy(() -> scorers.create("numeric_close:{\"abs_tol\":-1}"))
                .hasMessage("numeric_close option abs_tol must be a number of at least 0, not -1");
    }

    @Test
    void jaroWinklerAndJaccardAreCommonsTextsOnPublishedExamples() {
        // Wikipedia, "Jaro–Winkler distance": MARTHA/MARHTA 0.961, DIXON/DICKSONX 0.813
        assertThat(similarity("jaro_winkler", "MARTHA", "MARHTA")).isCloseTo(0.961, within(0.0005));
        assertThat(similarity("jaro_winkler", "DIXON", "DICKSONX")).isCloseTo(0.813, within(0.0005));
        assertThat(similarity("jaro_winkler", "Zürich", "Zürich")).isEqualTo(1.0);
        // character sets {n,i,g,h,t} and {n,a,c,h,t}: 3 shared of 7
        assertThat(similarity("jaccard", "night", "nacht")).isCloseTo(3.0 / 7, within(1e-12));
        assertThat(similarity("jaccard", "", "")).isEqualTo(1.0);
    }

    @Test
    void fuzzyRatiosMatchRapidFuzzsPublishedValues() {
        // RapidFuzz's README and documentation (scaled from 0..100)
        assertThat(similarity("partial", "this is a test", "this is a test!")).isEqualTo(1.0);
        assertThat(similarity("token_sort", "fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear"))
                .isEqualTo(1.0);
        assertThat(similarity("token_sort", "fuzzy was a bear", "fuzzy fuzzy was a bear"))
                .isCloseTo(0.8421052631578947, within(1e-12));
        assertThat(similarity("token_set", "fuzzy was a bear", "fuzzy fuzzy was a bear"))
                .isEqualTo(1.0);
        // fuzz.ratio("this is a test", "this is a test!") = 96.55172413793103; token_sort leaves these as they are
        assertThat(similarity("token_sort", "this is a test", "this is a test!"))
                .isCloseTo(0.9655172413793103, within(1e-12));
        // FuzzyWuzzy's README: partial_ratio("YANKEES", "NEW YORK YANKEES") = 100
        assertThat(similarity("partial", "YANKEES", "NEW YORK YANKEES")).isEqualTo(1.0);
        assertThat(similarity("partial", "NEW YORK YANKEES", "YANKEES")).isEqualTo(1.0);
        assertThat(similarity("partial", "", "abc")).isEqualTo(0.0);
        assertThat(similarity("token_set", "", "")).isEqualTo(0.0);
        // no shared token: the sorted rests compared, "a c" against "b d"
        assertThat(similarity("token_set", "a c", "b d")).isCloseTo(2.0 / 6, within(1e-12));
    }

    @Test
    void sequenceIsPythonsDifflibRatioIncludingItsAutojunkRule() {
        // the difflib documentation: SequenceMatcher(None, "abcd", "bcde").ratio() == 0.75
        assertThat(similarity("sequence", "abcd", "bcde")).isEqualTo(0.75);
        // difflib's find_longest_match example (" abcd" in "abcd abcd": one block of 5), ratio 10/14
        assertThat(similarity("sequence", " abcd", "abcd abcd")).isCloseTo(10.0 / 14, within(1e-12));
        // CPython 3.11's difflib: 0.8656716417910447 for this pair
        assertThat(similarity("sequence", "private Thread currentThread;", "private volatile Thread currentThread;"))
                .isCloseTo(0.8656716417910447, within(1e-12));
        // 264 characters: autojunk makes every frequent character "popular", and CPython answers
        // 0.06060606060606061 (0.9318181818181818 with autojunk=False)
        String a = "the quick brown fox jumps over the lazy dog ".repeat(6);
        String b = "the quick brown cat jumps over the lazy dog ".repeat(6);
        assertThat(similarity("sequence", a, b)).isCloseTo(0.06060606060606061, within(1e-12));
    }

    @Test
    void jsonValidAcceptsOneValueOnlyAndSurvivesHostileNesting() {
        assertThat(score("json_valid", "{\"a\": [1, 2]}", "").score()).isEqualTo(1.0);
        assertThat(score("json_valid", "42", "").score()).isEqualTo(1.0);
        RowScore trailing = score("json_valid", "{\"a\": 1} extra", "");
        assertThat(trailing.score()).isEqualTo(0.0);
        assertThat(trailing.metadata()).containsEntry("valid", false).containsKey("error");
        assertThat(score("json_valid", "", "").score()).isEqualTo(0.0);
        assertThat(score("json_valid", "{'a': 1}", "").score()).isEqualTo(0.0);
        RowScore deep = score("json_valid", "[".repeat(200_000) + "]".repeat(200_000), "");
        assertThat(deep.score()).isEqualTo(0.0);
        assertThat((String) deep.metadata().get("error")).contains("depth");
    }

    @Test
    void jsonMatchComparesWholeValuesOrDottedPaths() {
        assertThat(score("json_match", "{\"b\": 1.0, \"a\": [1, \"x\"]}", "{\"a\":[1,\"x\"],\"b\":1}")
                        .score())
                .isEqualTo(1.0);
        assertThat(score("json_match", "{\"a\": 2}", "{\"a\": 1}").metadata()).containsEntry("match", false);
        String candidate = "{\"city\": \"Paris\", \"items\": [{\"id\": 7}], \"country\": \"DE\"}";
        String reference = "{\"city\": \"Paris\", \"items\": [{\"id\": 7.0}], \"country\": \"FR\"}";
        RowScore paths = score("json_match:{\"paths\":[\"city\",\"items.0.id\",\"country\"]}", candidate, reference);
        assertThat(paths.score()).isCloseTo(2.0 / 3, within(1e-12));
        assertThat(paths.metadata())
                .containsEntry("matched_paths", List.of("city", "items.0.id"))
                .containsEntry("mismatched_paths", List.of("country"));
        RowScore notJson = score("json_match", "Paris", "{\"city\": \"Paris\"}");
        assertThat(notJson.score()).isEqualTo(0.0);
        assertThat((String) notJson.metadata().get("error")).startsWith("output is not valid JSON");
        assertThatThrownBy(() -> score("json_match", "{}", "nope"))
                .isInstanceOf(RowScoringException.class)
                .hasMessageStartingWith("column 'expected' is not valid JSON");
        assertThatThrownBy(() -> scorers.create("json_match:{\"paths\":[\"a..b\"]}"))
                .hasMessageContaining("not 'a..b'");
    }

    @Test
    void embeddingSimilarityRunsMiniLmInTheJvmAndScoresParaphrasesAboveUnrelatedText() {
        RowScore paraphrase = score("embedding_similarity", "The cat sat on the mat.", "A cat was sitting on the mat.");
        RowScore unrelated =
                score("embedding_similarity", "The cat sat on the mat.", "Quarterly revenue fell by 3 percent.");
        RowScore same =
                score("embedding_similarity", "Paris is the capital of France.", "Paris is the capital of France.");
        assertThat(same.score()).isCloseTo(1.0, within(1e-5));
        assertThat(paraphrase.score()).isGreaterThan(0.7);
        assertThat(unrelated.score()).isLessThan(0.3);
        assertThat(paraphrase.metadata())
                .containsEntry("model", "all-minilm-l6-v2")
                .containsKey("cosine");
        assertThatThrownBy(() -> scorers.create("embedding_similarity:{\"model\":\"text-embedding-3-small\"}"))
                .hasMessageContaining("give base_url");
        assertThatThrownBy(() ->
                        scorers.create("embedding_similarity:{\"base_url\":\"http://127.0.0.1:1/v1\",\"model\":\"m\","
                                + "\"api_key_secret\":\"MISSING\"}"))
                .hasMessageContaining("names the secret MISSING, which this environment does not have");
    }

    @Test
    void stringScorersRefuseRowsWhoseTextsWouldHoldAThreadForGood() {
        String long1 = "ab".repeat(15_000);
        String long2 = "ba".repeat(15_000);
        long start = System.nanoTime();
        for (String id : List.of(
                "levenshtein",
                "string_similarity:{\"method\":\"sequence\"}",
                "string_similarity:{\"method\":\"token_sort\"}",
                "string_similarity:{\"method\":\"jaro_winkler\"}")) {
            assertThatThrownBy(() -> score(id, long1, long2))
                    .as(id)
                    .isInstanceOf(RowScoringException.class)
                    .hasMessageContaining("texts of 30000 and 30000 characters, past the 400000000 a row may take");
        }
        // the shorter text against every window of the longer: cubic in the shorter one
        assertThatThrownBy(() -> score("string_similarity:{\"method\":\"partial\"}", "x".repeat(800), long1))
                .isInstanceOf(RowScoringException.class)
                .hasMessageContaining("string_similarity partial would take about");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
        // the estimate does not wrap around for texts of millions of characters
        String million = "z".repeat(2_000_000);
        assertThat(RowWork.windows(million, million)).isEqualTo(Long.MAX_VALUE);
        assertThat(RowWork.windows("a".repeat(1_000_000), "b".repeat(10_000_000)))
                .isGreaterThan(RowWork.BUDGET);
        // texts of a usual answer's length still score, and sets of characters cost no product
        assertThat(similarity("partial", "needle", "hay ".repeat(2_000) + "needle"))
                .isEqualTo(1.0);
        assertThat(score("levenshtein", "a".repeat(10_000), "a".repeat(10_000)).score())
                .isEqualTo(1.0);
        assertThat(similarity("jaccard", long1, long2)).isEqualTo(1.0);
    }
}
