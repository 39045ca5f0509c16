// the client starter brings the SDK and the autoconfiguration, nothing of the embedded server
def tree = new File(basedir, 'tree.txt').text
assert tree.contains('chalk-compute-core') && tree.contains('chalk-compute-autoconfigure') : tree
['chalk-compute-server', 'com.h2database', 'docker-java', 'org.bouncycastle', 'pty4j', 'kotlin-stdlib'].each {
    assert !tree.contains(it) : "${it} came with the client starter:\n" + tree
}
def majors = (tree =~ /com\.google\.protobuf:protobuf-java(?:-util)?:jar:(\d+)\./).collect { it[1] }.unique()
assert majors.size() == 1 : "mixed protobuf versions:\n" + tree
assert !tree.contains('protobuf-javalite') : "the lite runtime beside protobuf-java:\n" + tree
return true
