package ai.chalk.compute.autoconfigure.evaluation;

import ai.chalk.compute.evaluation.FunctionLookup;
import ai.chalk.compute.evaluation.Scorer;
import ai.chalk.compute.evaluation.judge.JudgeFunction;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The application's LLM judge beans by name, as an evaluation's scorers: a judge named so is deployed as its scorer
 * function (its unchanged version found again) when an evaluation names it, as a judge given directly would be. Other
 * names go to the lookup before it.
 */
final class JudgeBeanLookup implements FunctionLookup {

    private final FunctionLookup next;
    private final List<Scorer> judges;
    private final FunctionDeployer deployer;

    JudgeBeanLookup(FunctionLookup next, List<Scorer> judges, FunctionDeployer deployer) {
        this.next = next;
        this.judges = List.copyOf(judges);
        this.deployer = deployer;
    }

    @Override
    public Optional<String> versionId(String name, Duration timeout) {
        Optional<String> own = next.versionId(name, timeout);
        if (own.isPresent()) {
            return own;
        }
        return judges.stream()
                .filter(judge -> judge.name().equals(name))
                .findFirst()
                .map(judge -> JudgeFunction.deploy(judge, deployer).id());
    }
}
