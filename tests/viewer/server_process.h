// Viewer tests: a polytope-server of this build run as a child process, and what the geometry tests count.
#pragma once

#include "viewer/view_frame.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

extern char** environ;

namespace polytope::viewer::test
{

/// A polytope-server (or any program) started with `args`, stopped (SIGTERM to its own pid) when destroyed.
struct ServerProcess
{
    pid_t pid = -1;
    explicit ServerProcess(const std::vector<std::string>& args)
    {
        std::vector<char*> argv;
        for (const std::string& a : args)
        {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
        {
            pid = -1;
        }
    }
    ~ServerProcess()
    {
        if (pid > 0)
        {
            kill(pid, SIGTERM);
            int status = 0;
            waitpid(pid, &status, 0);
        }
    }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;
};

/// Distinct vertex positions of a surface.
inline std::size_t distinctVertices(const HullMesh& mesh)
{
    std::set<std::tuple<float, float, float>> points;
    for (std::size_t v = 0; v + 6 <= mesh.vertices.size(); v += 6)
    {
        points.insert({mesh.vertices[v], mesh.vertices[v + 1], mesh.vertices[v + 2]});
    }
    return points.size();
}

} // namespace polytope::viewer::test
