package ai.chalk.compute.network;

import ai.chalk.compute.proto.container.v1.AllowedRoute;
import ai.chalk.compute.proto.container.v1.NetworkPolicyKeyValueMatcher;
import ai.chalk.compute.proto.container.v1.NetworkPolicyMatch;
import ai.chalk.compute.proto.container.v1.NetworkPolicyMatcher;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRuleList;
import ai.chalk.compute.proto.container.v1.NetworkTransformer;
import ai.chalk.compute.proto.container.v1.PortRange;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretBindings;
import ai.chalk.compute.secret.SecretsClient;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A workload's network policy and credentials as its container spec carries them ({@code network_policy}, Chalk's
 * {@code NetworkPolicy}) and the variables holding the credentials' placeholders. A credential is a rule of each of its
 * hosts whose {@code headers_secrets} entry is keyed {@value #PLACEHOLDER_KEY}{@code <placeholder>} (no header name
 * can contain ':'); the server replaces the placeholder by the secret in headers to that host. Local secrets are saved
 * as managed secrets here, as for {@code secret_refs}.
 */
public final class NetworkSpecs {

    /** The {@code headers_secrets} key prefix of a credential placeholder; the server reads the same. */
    public static final String PLACEHOLDER_KEY = "placeholder:";

    private NetworkSpecs() {}

    /**
     * What a workload's spec gets.
     *
     * @param policy         the spec's {@code network_policy}; empty when the workload sets none
     * @param env            the credentials' variables and their placeholders
     * @param uploaded       the managed secrets saved for local values (deleted again when the workload goes)
     * @param managedSecrets the Chalk secrets the policy names, whose revisions identify a function version
     */
    public record Compiled(
            Optional<ai.chalk.compute.proto.container.v1.NetworkPolicy> policy,
            Map<String, String> env,
            List<String> uploaded,
            List<Secret> managedSecrets) {

        /** Nothing: no policy, no credentials. */
        public static final Compiled NONE = new Compiled(Optional.empty(), Map.of(), List.of(), List.of());

        /** Copies the collections. */
        public Compiled {
            env = Map.copyOf(env);
            uploaded = List.copyOf(uploaded);
            managedSecrets = List.copyOf(managedSecrets);
        }
    }

    /**
     * The spec's network of {@code policy} (null: none set) and {@code credentials}; credentials without a policy
     * give a policy of their hosts alone.
     *
     * @param secrets saves local values as managed secrets
     * @throws IllegalArgumentException when a credential's variable is set twice
     */
    public static Compiled compile(NetworkPolicy policy, List<Credential> credentials, SecretsClient secrets) {
        if (policy == null && credentials.isEmpty()) {
            return Compiled.NONE;
        }
        NetworkPolicy p = policy == null ? NetworkPolicy.none() : policy;
        Map<String, String> env = new LinkedHashMap<>();
        List<String> uploaded = new ArrayList<>();
        List<Secret> managed = new ArrayList<>();
        Map<Secret, String> names = new LinkedHashMap<>();
        try {
            ai.chalk.compute.proto.container.v1.NetworkPolicy.Builder proto =
                    ai.chalk.compute.proto.container.v1.NetworkPolicy.newBuilder();
            for (NetworkPolicy.Route r : p.routes()) {
                AllowedRoute.Builder route = AllowedRoute.newBuilder().setRoute(r.cidr());
                r.ports()
                        .forEach(range -> route.addPortRanges(
                                PortRange.newBuilder().setStartPort(range[0]).setEndPort(range[1])));
                proto.addAllowedRoutes(route);
            }
            proto.addAllDeniedRoutes(p.denied());
            Map<String, NetworkPolicyRuleList.Builder> hosts = new LinkedHashMap<>();
            for (Map.Entry<String, List<NetworkRule>> host : p.hosts().entrySet()) {
                NetworkPolicyRuleList.Builder rules = NetworkPolicyRuleList.newBuilder();
                for (NetworkRule rule : host.getValue()) {
                    rules.addRules(rule(rule, secrets, names, uploaded, managed));
                }
                hosts.put(host.getKey(), rules);
            }
            for (Credential c : credentials) {
                if (env.put(c.variable(), c.placeholder()) != null) {
                    throw new IllegalArgumentException("two credentials use the variable " + c.variable());
                }
                NetworkPolicyRule rule = NetworkPolicyRule.newBuilder()
                        .addTransform(NetworkTransformer.newBuilder()
                                .putHeadersSecrets(
                                        PLACEHOLDER_KEY + c.placeholder(),
                                        name(c.secret(), secrets, names, uploaded, managed)))
                        .build();
                for (String host : c.hosts()) {
                    hosts.computeIfAbsent(host, h -> NetworkPolicyRuleList.newBuilder())
                            .addRules(rule);
                }
            }
            hosts.forEach((host, rules) -> proto.putAllowedHosts(host, rules.build()));
            return new Compiled(Optional.of(proto.build()), env, uploaded, managed);
        } catch (RuntimeException e) {
            secrets.forget(uploaded);
            throw e;
        }
    }

    private static NetworkPolicyRule rule(
            NetworkRule rule,
            SecretsClient secrets,
            Map<Secret, String> names,
            List<String> uploaded,
            List<Secret> managed) {
        NetworkTransformer.Builder transform = NetworkTransformer.newBuilder().putAllHeaders(rule.headers());
        rule.headerSecrets()
                .forEach((header, secret) ->
                        transform.putHeadersSecrets(header, name(secret, secrets, names, uploaded, managed)));
        NetworkPolicyRule.Builder r = NetworkPolicyRule.newBuilder();
        if (!rule.headers().isEmpty() || !rule.headerSecrets().isEmpty()) {
            r.addTransform(transform);
        }
        rule.forwardUrl().ifPresent(r::setForwardUrl);
        if (!rule.match().isAny()) {
            r.setMatch(match(rule.match()));
        }
        return r.build();
    }

    private static NetworkPolicyMatch match(RequestMatch m) {
        NetworkPolicyMatch.Builder b = NetworkPolicyMatch.newBuilder().addAllMethod(m.methods());
        m.path().ifPresent(p -> b.setPath(matcher(p)));
        m.query().forEach(kv -> b.addQueryString(keyValue(kv)));
        m.headers().forEach(kv -> b.addHeaders(keyValue(kv)));
        return b.build();
    }

    private static NetworkPolicyKeyValueMatcher keyValue(Map.Entry<Optional<TextMatch>, Optional<TextMatch>> kv) {
        NetworkPolicyKeyValueMatcher.Builder b = NetworkPolicyKeyValueMatcher.newBuilder();
        kv.getKey().ifPresent(k -> b.setKey(matcher(k)));
        kv.getValue().ifPresent(v -> b.setValue(matcher(v)));
        return b.build();
    }

    private static NetworkPolicyMatcher matcher(TextMatch m) {
        if (m instanceof TextMatch.Exact e) {
            return NetworkPolicyMatcher.newBuilder().setExact(e.text()).build();
        }
        if (m instanceof TextMatch.StartsWith s) {
            return NetworkPolicyMatcher.newBuilder().setStartsWith(s.prefix()).build();
        }
        return NetworkPolicyMatcher.newBuilder()
                .setRegex(((TextMatch.Regex) m).regex())
                .build();
    }

    /** The managed secret's name for {@code secret}: its own, or one saved now for a local value (once each). */
    private static String name(
            Secret secret,
            SecretsClient secrets,
            Map<Secret, String> names,
            List<String> uploaded,
            List<Secret> managed) {
        String known = names.get(secret);
        if (known != null) {
            return known;
        }
        String name = Credential.secretName(secret, "a network rule's secret");
        if (name.isEmpty()) {
            Secret.LocalEnv local = (Secret.LocalEnv) secret;
            SecretsClient.References refs =
                    secrets.references(new SecretBindings(Map.of(local.variable(), local), List.of()));
            uploaded.addAll(refs.uploaded());
            name = refs.refs().get(0).getSecretName();
        } else {
            managed.add(secret);
        }
        names.put(secret, name);
        return name;
    }
}
