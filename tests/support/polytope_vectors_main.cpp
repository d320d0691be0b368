// polytope-vectors OUTDIR: writes the protocol's test vectors (protocol/vectors/README.md) into OUTDIR.
#include "support/protocol_vectors.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: polytope-vectors OUTDIR\n";
        return 2;
    }
    try
    {
        const std::filesystem::path directory(argv[1]);
        std::filesystem::create_directories(directory);
        for (const polytope::testing::VectorFile& file : polytope::testing::buildProtocolVectors())
        {
            std::ofstream out(directory / file.name, std::ios::binary);
            out << file.text;
            if (!out)
            {
                std::cerr << "polytope-vectors: cannot write " << (directory / file.name) << "\n";
                return 1;
            }
            std::cout << (directory / file.name).string() << ": " << file.text.size() << " bytes\n";
        }
    }
    catch (const std::exception& error)
    {
        std::cerr << error.what() << "\n";
        return 1;
    }
    return 0;
}
