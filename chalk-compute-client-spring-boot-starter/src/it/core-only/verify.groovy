// what a core-only user resolves: one protobuf family, the versions the SDK was tested with
def tree = new File(basedir, 'tree.txt').text
def protobuf = (tree =~ /com\.google\.protobuf:(protobuf-java(?:-util)?):jar:([^:]+)/).collect { [it[1], it[2]] }
assert protobuf.any { it[0] == 'protobuf-java-util' } : "protobuf-java-util missing from:\n" + tree
def majors = protobuf.collect { it[1].tokenize('.')[0] }.unique()
assert majors.size() == 1 : "mixed protobuf versions: " + protobuf
assert !tree.contains('chalk-compute-server') : "core must not bring the server:\n" + tree
assert !tree.contains('protobuf-javalite') : "the lite runtime beside protobuf-java:\n" + tree
return true
