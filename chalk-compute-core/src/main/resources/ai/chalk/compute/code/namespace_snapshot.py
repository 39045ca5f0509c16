# The interpreter's half of a code sandbox's snapshot (NamespaceSnapshot.java): the snippets' variables written to a
# file before the sandbox's files are taken, and read back in the sandbox made from the snapshot. Imported modules
# are kept by name and imported again, functions and classes a snippet defined by their source, every other value
# by pickle (each on its own, so that one that cannot be pickled is named and skipped, not fatal). Names starting
# with "_" and the shell's own (In, Out, exit, ...) are not the user's state.


def _chalk_namespace_save(path):
    import inspect
    import io
    import os
    import pickle
    import types

    ns = globals()
    shell_names = {"In", "Out", "exit", "quit", "get_ipython", "display"}
    defined = (type, types.FunctionType)
    modules, sources, values, kept, skipped = {}, [], {}, [], []
    for name, value in list(ns.items()):
        if name.startswith("_") or name in shell_names:
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            kept.append(name)
        elif isinstance(value, defined) and value.__module__ == "__main__" and value.__name__ == name:
            try:
                sources.append((name, inspect.getsource(value)))
                kept.append(name)
            except (OSError, TypeError):
                skipped.append(name)
    by_source = {name for name, _ in sources}

    class Pickler(pickle.Pickler):
        # a snippet's class or function travels by name and is defined again from its source before the values
        def persistent_id(self, obj):
            if isinstance(obj, defined) and getattr(obj, "__module__", None) == "__main__":
                if obj.__name__ in by_source and ns.get(obj.__name__) is obj:
                    return ("__main__", obj.__name__)
                raise pickle.PicklingError(obj.__qualname__ + " was defined by a snippet without source")
            return None

    for name, value in list(ns.items()):
        if name.startswith("_") or name in shell_names or name in modules or name in by_source:
            continue
        if name in skipped:
            continue
        buffer = io.BytesIO()
        try:
            Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        except Exception:
            skipped.append(name)
            continue
        values[name] = buffer.getvalue()
        kept.append(name)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"version": 1, "modules": modules, "sources": sources, "values": values}, f)
    for name in kept:
        print("variable", name)
    for name in skipped:
        print("skipped", name)


def _chalk_namespace_restore(path):
    import importlib
    import io
    import os
    import pickle

    if not os.path.exists(path):
        return
    ns = globals()
    with open(path, "rb") as f:
        state = pickle.load(f)

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return ns[pid[1]]

    for name, module in state["modules"].items():
        try:
            ns[name] = importlib.import_module(module)
            print("variable", name)
        except Exception:
            print("skipped", name)
    for name, source in state["sources"]:
        try:
            exec(compile(source, "<snapshot " + name + ">", "exec"), ns)
            print("variable", name)
        except Exception:
            print("skipped", name)
    for name, data in state["values"].items():
        try:
            ns[name] = Unpickler(io.BytesIO(data)).load()
            print("variable", name)
        except Exception:
            print("skipped", name)
